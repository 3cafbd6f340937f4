"""ps-scaling: median sync time per iteration (min-max error bars over the
seeds) against the number of DCs, with the WAN's lower bounds: `t_lb`
(testbed/bounds: no overlay can synchronize faster; the labels are the
star's ratio to it), the cut bound for contrast, and `t_opt` (the best
tree packing) in the table.  draw() keeps each completed run's records
(testbed/analysis/records.py) and computes table.csv from them alone
(`table`): per setting the median, min, max and 95% interval over its
runs of each run's sync time (its summary's `sync_time`)."""

import os

from testbed.analysis import records
from testbed.analysis.stats import BOUND_COLUMNS, bounds_against, describe, write_table

COLUMNS = ("dcs", "runs", "sync_median_s", "sync_min_s", "sync_max_s", "sync_ci95_s",
           *BOUND_COLUMNS, "failed")


def table(runs_dir):
    """One row per number of DCs (COLUMNS), from the records alone."""
    kept, failed = records.load(runs_dir)
    out = []
    for n in sorted({r.setting["worker_dcs"] for r in kept} | {f["setting"]["worker_dcs"] for f in failed}):
        ok = [r.summary for r in kept if r.setting["worker_dcs"] == n]
        sync = describe([s.get("sync_time") for s in ok])
        out.append({"dcs": n, "runs": sync["n"], "sync_median_s": sync["median"],
                    "sync_min_s": sync["min"], "sync_max_s": sync["max"],
                    "sync_ci95_s": sync["ci95"], **bounds_against(ok, sync["median"]),
                    "failed": sum(1 for f in failed if f["setting"]["worker_dcs"] == n)})
    return out


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs_dir = os.path.join(out_dir, records.RUNS)
    records.keep(rows, runs_dir)
    got = table(runs_dir)
    write_table(got, os.path.join(out_dir, "table.csv"), COLUMNS)

    done = [t for t in got if t["sync_median_s"] is not None]
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
