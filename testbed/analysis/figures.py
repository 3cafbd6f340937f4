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


def median_bars(ax, groups, series, bounds=None, log=False):
    """Grouped bars, one group per name in `groups` and one bar per series
    in each: `series` is [(label, [(min, median, max) or None per group])],
    drawn as the median with a min-max error bar.  `bounds`, parallel to
    `series` ([[bound or None per group]]), draws each bar's bound as a
    black dash across it, with the bar's median over it written above.
    `log`: a logarithmic axis, for bars an order of magnitude apart."""
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        drawn = [(j, v) for j, v in enumerate(values) if v and v[1] is not None]
        if not drawn:
            continue
        xs = [j + offset for j, _ in drawn]
        med = [v[1] for _, v in drawn]
        err = [[v[1] - v[0] for _, v in drawn], [v[2] - v[1] for _, v in drawn]]
        ax.bar(xs, med, width, yerr=err, capsize=3, label=label, color=f"C{i}")
        for x, (j, v) in zip(xs, drawn):
            bound = bounds[i][j] if bounds else None
            if bound:
                ax.hlines(bound, x - width / 2, x + width / 2, colors="k", linestyles="--")
                ax.annotate(f"{v[1] / bound:.1f}x", (x, v[2]), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    if log:
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, None)


def every_run(ax, series, level, title):
    """Test accuracy against wall time of every run, a colour per series
    (`series`: [(label, [[(t, accuracy)] of each run])]), with the target
    `level` dotted."""
    for i, (label, runs) in enumerate(series):
        for j, points in enumerate(runs):
            ax.plot([t for t, _ in points], [a for _, a in points], color=f"C{i}", alpha=0.7, lw=1,
                    label=label if j == 0 else None)
    ax.axhline(level, color="k", lw=0.5, ls=":")
    ax.set(xlabel="wall time since training began (s)", ylabel="test accuracy", ylim=(0.3, 1.0),
           title=title)
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8, loc="lower right")
