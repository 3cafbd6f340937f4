"""overlay-compare: per overlay and network, the median sync time per
iteration against the WAN's lower bounds (left) and the median time to the
target accuracy (right), with min-max bars over the seeds.  The bounds,
from the links as configured: `t_lb` (testbed/bounds: no overlay can
synchronize faster), `t_opt` (the best tree packing, in the table) and
the cut bound, for contrast; on the fluctuating network also `t_lb` of the
links as they were while each synchronization ran (the median over its
iterations, `t_lb_as_run_s`), which the figure draws there."""

import os

from testbed.analysis.stats import BOUND_COLUMNS, bounds_against, describe, ratio, write_table

OVERLAYS = ("ps", "mlnet", "tsengine")
NAMES = {"ps": "PS star", "mlnet": "MLNET (k=2)", "tsengine": "TSEngine"}
NETWORKS = ("static", "fluctuating")
COLUMNS = ("network", "overlay", "runs", "sync_median_s", "sync_min_s", "sync_max_s",
           *BOUND_COLUMNS, "tsengine_over_this_sync", "reached_target",
           "tta_median_s", "tta_min_s", "tta_max_s", "tsengine_over_this_tta", "iterations_median",
           "failed")


def network_of(row):
    return "fluctuating" if row.get("dynamics") else "static"


def summarize(rows):
    table = []
    for net in NETWORKS:
        for ov in OVERLAYS:
            mine = [r for r in rows if network_of(r) == net and r.get("experiment.overlay") == ov]
            if not mine:
                continue
            ok = [r for r in mine if r.get("status") == "completed"]
            sync = describe([r.get("sync_time") for r in ok])
            reached = [r.get("time_to_target") for r in ok if r.get("time_to_target") is not None]
            tta = describe(reached)
            table.append({"network": net, "overlay": ov, "runs": sync["n"],
                          "sync_median_s": sync["median"], "sync_min_s": sync["min"],
                          "sync_max_s": sync["max"], **bounds_against(ok, sync["median"]),
                          "reached_target": f"{len(reached)}/{len(mine)}",
                          "tta_median_s": tta["median"], "tta_min_s": tta["min"],
                          "tta_max_s": tta["max"],
                          "iterations_median": describe([r.get("iterations") for r in ok])["median"],
                          "failed": len(mine) - len(ok)})
    for net in NETWORKS:
        ts = [t for t in table if t["network"] == net and t["overlay"] == "tsengine"]
        for t in table:
            if t["network"] == net:
                # > 1: TSEngine is slower than this overlay by that factor
                t["tsengine_over_this_sync"] = ratio(ts[0]["sync_median_s"], t["sync_median_s"]) if ts else None
                t["tsengine_over_this_tta"] = ratio(ts[0]["tta_median_s"], t["tta_median_s"]) if ts else None
    return table


def bars(ax, table, key, bound_keys=(), contrast_key=None):
    """Grouped bars: one group per network, one bar per overlay, min-max
    error bars; the bound, the first of `bound_keys` a row has, as a black
    dash over each bar with the bar's ratio to it, and a second bound as a
    dotted line."""
    width = 0.26
    for i, ov in enumerate(OVERLAYS):
        xs, med, lo, hi, bound, contrast = [], [], [], [], [], []
        for j, net in enumerate(NETWORKS):
            t = next((t for t in table if t["network"] == net and t["overlay"] == ov), None)
            if t is None or t[f"{key}_median_s"] is None:
                continue
            m = t[f"{key}_median_s"]
            xs.append(j + (i - 1) * width)
            med.append(m)
            lo.append(m - t[f"{key}_min_s"])
            hi.append(t[f"{key}_max_s"] - m)
            bound.append(next((t[k] for k in bound_keys if t.get(k)), None))
            contrast.append(t.get(contrast_key) if contrast_key else None)
        if not xs:
            continue
        ax.bar(xs, med, width, yerr=[lo, hi], capsize=3, label=NAMES[ov], color=f"C{i}")
        for x, m, top, b, c in zip(xs, med, hi, bound, contrast):
            if c:
                ax.hlines(c, x - width / 2, x + width / 2, colors="k", linestyles=":")
            if b:
                ax.hlines(b, x - width / 2, x + width / 2, colors="k", linestyles="--")
                ax.annotate(f"{m / b:.1f}x", (x, m + top), textcoords="offset points", xytext=(0, 3),
                            ha="center", fontsize=7)
    ax.set_xticks(range(len(NETWORKS)))
    ax.set_xticklabels(NETWORKS)
    ax.set_ylim(0, None)


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    table = summarize(rows)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(table, csv_path, COLUMNS)

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    # Under fluctuation, t_lb of the links as they were while each sync ran.
    bars(left, table, "sync", bound_keys=("t_lb_as_run_s", "t_lb_s"), contrast_key="bound_s")
    left.set(ylabel="sync time per iteration (s)", title="sync time (median, min-max)")
    handles, labels = left.get_legend_handles_labels()
    handles += [Line2D([], [], color="k", linestyle="--"), Line2D([], [], color="k", linestyle=":")]
    labels += ["lower bound t_lb (links as they were)", "cut bound (as configured)"]
    left.legend(handles, labels, fontsize=8)
    bars(right, table, "tta")
    right.set(ylabel="time to 90% test accuracy (s)", title="time to accuracy (median, min-max)")
    fig.suptitle("5 DCs, 10 workers, MLP on digits, SSGD: PS star vs MLNET vs TSEngine", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
