"""overlay-compare: per overlay and network, the sync time per iteration
against the WAN's lower bound `t_lb`, and the time to 90% and 95% test
accuracy, each the median over the seeds with min-max bars; below, every
run's accuracy against wall time.

draw() keeps each completed run's records (testbed/analysis/records.py)
and computes table.csv from them alone (`table`).  Per run: the median
over its iterations after the first of the slowest worker's sync counted
from the last start, and of that sync over `t_lb` of the links as they
were while it ran (on the static network `t_lb` as configured); the time
to each accuracy by the shared rule (testbed/analysis/accuracy.py: a
running median of three evaluations, taken every second of wall time,
crossing the level, interpolated).  Per setting: the median, min and max
over its runs."""

import os

from testbed.analysis import records
from testbed.analysis.accuracy import tta_columns
from testbed.analysis.figures import every_run, median_bars
from testbed.analysis.stats import describe, ratio, spread, write_table

OVERLAYS = ("ps", "mlnet", "tsengine", "tsengine-whole")
NAMES = {"ps": "PS star", "mlnet": "MLNET (k=2)", "tsengine": "TSEngine (per tensor)",
         "tsengine-whole": "TSEngine (whole model)"}
NETWORKS = ("static", "fluctuating")
LEVELS = (0.90, 0.95)
COLUMNS = ("network", "overlay", "runs", "failed", "sync_median_s", "sync_min_s", "sync_max_s",
           "t_lb_s", "t_opt_s", "sync_over_t_lb_median", "sync_over_t_lb_min", "sync_over_t_lb_max",
           *(f"tta_{round(100 * level)}_{stat}" for level in LEVELS
             for stat in ("median_s", "min_s", "max_s", "reached")),
           "tsengine_over_this_tta_95", "iterations_median")


def network_of(setting):
    return "fluctuating" if setting.get("dynamics") else "static"


def overlay_of(setting):
    return setting["variant"]["name"]


def run_numbers(record):
    """{sync, t_lb, over, t_opt, iterations, tta_90, tta_95} of one run's record."""
    return {**record.sync(), "t_opt": record.summary.get("sync_t_opt"),
            "iterations": record.summary.get("iterations"),
            **record.times_to(LEVELS)}


def table(runs_dir):
    """One row per network and overlay (COLUMNS), from the records alone."""
    kept, failed = records.load(runs_dir)
    out = []
    for net in NETWORKS:
        for ov in OVERLAYS:
            mine = [run_numbers(r) for r in kept
                    if network_of(r.setting) == net and overlay_of(r.setting) == ov]
            lost = sum(1 for f in failed
                       if network_of(f["setting"]) == net and overlay_of(f["setting"]) == ov)
            if not mine and not lost:
                continue
            row = {"network": net, "overlay": ov, "runs": len(mine), "failed": lost,
                   **spread("sync", describe([m["sync"] for m in mine]), "_s"),
                   "t_lb_s": describe([m["t_lb"] for m in mine])["median"],
                   "t_opt_s": describe([m["t_opt"] for m in mine])["median"],
                   **spread("sync_over_t_lb", describe([m["over"] for m in mine])),
                   "iterations_median": describe([m["iterations"] for m in mine])["median"]}
            for level in LEVELS:
                key = f"tta_{round(100 * level)}"
                row.update(tta_columns(mine, key))
            out.append(row)
    for row in out:
        ts = next((t for t in out if t["network"] == row["network"] and t["overlay"] == "tsengine"), None)
        # > 1: TSEngine needs that many times longer than this overlay.
        row["tsengine_over_this_tta_95"] = ratio(ts["tta_95_median_s"], row["tta_95_median_s"]) if ts else None
    return out


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs_dir = os.path.join(out_dir, records.RUNS)
    records.keep(rows, runs_dir)
    got = table(runs_dir)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(got, csv_path, COLUMNS)

    fig, ((sync_ax, tta_ax), *acc_axes) = plt.subplots(2, 2, figsize=(12, 8))
    series = [(NAMES[ov], [next((t for t in got if t["network"] == net and t["overlay"] == ov), None)
                           for net in NETWORKS]) for ov in OVERLAYS]
    median_bars(sync_ax, NETWORKS, [(name, [t and (t["sync_min_s"], t["sync_median_s"], t["sync_max_s"])
                                            for t in ts]) for name, ts in series],
                bounds=[[t and t["t_lb_s"] for t in ts] for _, ts in series])
    sync_ax.set(ylabel="sync time per iteration (s)",
                title="sync from the last start (median of runs, min-max);\ndashes: t_lb of the links as they were")
    median_bars(tta_ax, NETWORKS, [(name, [t and (t["tta_95_min_s"], t["tta_95_median_s"], t["tta_95_max_s"])
                                           for t in ts]) for name, ts in series])
    tta_ax.set(ylabel="time to 95% test accuracy (s)", title="time to accuracy (median of runs, min-max)")
    tta_ax.legend(fontsize=8, loc="upper left")
    lines = records.evals_by(runs_dir, lambda s: (network_of(s), overlay_of(s)))
    for ax, net in zip(acc_axes[0], NETWORKS):
        every_run(ax, [(NAMES[ov], lines.get((net, ov), [])) for ov in OVERLAYS], 0.95,
                  f"{net} network: every run")
        ax.set_ylim(0.5, 1.0)
    fig.suptitle("5 DCs, one worker each, a 1 MB MLP on digits, SSGD", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
