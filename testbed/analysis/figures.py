"""Saving a matplotlib figure the way every report does, and the figures
every kind of run draws alike."""


def save(fig, path):
    """Write `fig` to `path` as a PNG and free it; the path."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def links_figure(samples, events, t0, since):
    """Each WAN direction's configured rate, measured throughput and probe
    estimates against time since t0 (`since` names that moment), or None
    when no link was sampled."""
    import matplotlib.pyplot as plt
    from testbed.analysis.wan import link_series, probe_estimates

    series = link_series(samples)
    if not series:
        return None
    estimates = probe_estimates(events)
    keys = sorted(series)
    fig, axes = plt.subplots(len(keys), 1, figsize=(9, 1.8 * len(keys) + 0.6), sharex=True,
                             squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        rows = series[key]
        ts = [r[0] - t0 for r in rows]
        ax.step(ts, [r[1] / 1e6 for r in rows], where="post", label="configured", color="k")
        ax.plot(ts, [r[2] / 1e6 for r in rows], label="measured", color="tab:red")
        if key in estimates:
            ax.plot([e["t"] - t0 for e in estimates[key]], [e["bw"] / 1e6 for e in estimates[key]],
                    ".", label="probe estimate", color="tab:blue")
        ax.set_ylabel("Mbit/s")
        ax.set_title(f"{key[0]} -> {key[1]}", fontsize=9)
    axes[0, 0].legend(fontsize=8)
    axes[-1, 0].set_xlabel(f"time since {since} (s)")
    return fig
