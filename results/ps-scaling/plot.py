"""ps-scaling: median sync time per iteration (min-max error bars over the
seeds) against the number of DCs, with the WAN's lower bounds: `t_lb`
(testbed/bounds: no overlay can synchronize faster; the labels are the
star's ratio to it), the cut bound for contrast, and `t_opt` (the best
tree packing) in the table."""

import os

from testbed.analysis.stats import BOUND_COLUMNS, bounds_against, describe, write_table

COLUMNS = ("dcs", "runs", "sync_median_s", "sync_min_s", "sync_max_s", "sync_ci95_s",
           *BOUND_COLUMNS, "failed")


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = []
    for n in sorted({r["worker_dcs"] for r in rows}):
        mine = [r for r in rows if r["worker_dcs"] == n]
        ok = [r for r in mine if r.get("status") == "completed"]
        sync = describe([r.get("sync_time") for r in ok])
        table.append({"dcs": n, "runs": sync["n"], "sync_median_s": sync["median"],
                      "sync_min_s": sync["min"], "sync_max_s": sync["max"],
                      "sync_ci95_s": sync["ci95"], **bounds_against(ok, sync["median"]),
                      "failed": len(mine) - len(ok)})
    write_table(table, os.path.join(out_dir, "table.csv"), COLUMNS)

    done = [t for t in table if t["sync_median_s"] is not None]
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [t["dcs"] for t in done]
    med = [t["sync_median_s"] for t in done]
    err = [[m - t["sync_min_s"] for m, t in zip(med, done)], [t["sync_max_s"] - m for m, t in zip(med, done)]]
    ax.errorbar(xs, med, yerr=err, marker="o", capsize=4, label="PS star (SSGD), median, min-max")
    ax.plot(xs, [t["t_lb_s"] for t in done], "k--", marker="s", label="lower bound t_lb (any overlay)")
    ax.plot(xs, [t["bound_s"] for t in done], "k:", marker=".", label="cut bound")
    for t in done:
        ax.annotate(f"{t['median_over_t_lb']:.1f}x", (t["dcs"], t["sync_median_s"]),
                    textcoords="offset points", xytext=(6, -4), fontsize=8)
    ax.set(xlabel="data centers with workers", ylabel="sync time per iteration (s)",
           title="PS in-cast: sync time vs DCs", ylim=(0, None))
    ax.set_xticks(xs)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, os.path.join(out_dir, "table.csv")]
