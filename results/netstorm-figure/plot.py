"""netstorm-figure: accuracy against wall time per system on the static
and the dynamic WAN (top, every run); the time to 85% accuracy of every
system and of NetStorm's ablations (bottom left, 85%) and their sync time per
iteration against `t_lb` of the links as they were (bottom right), each
the median over the seeds with min-max bars.

draw() keeps each completed run's records (testbed/analysis/records.py)
and computes table.csv from them alone (`table`).  Per run: the time to
each accuracy by the shared rule (testbed/analysis/accuracy.py), and the
median over its iterations after the first of the slowest worker's sync
counted from the last start, and of that sync over `t_lb` of the links as
they were while it ran.  Per setting: the median, min and max over runs;
the speedup over the star is the median, min and max of the per-seed
ratios of the star's time to this system's (the same seed draws the same
shards, initial weights and link rates for every system)."""

import os

from testbed.analysis import records
from testbed.analysis.accuracy import tta_columns
from testbed.analysis.figures import every_run, median_bars
from testbed.analysis.stats import describe, paired, spread, write_table

SYSTEMS = ("mxnet", "mxnet-widest", "mlnet", "tsengine", "netstorm")
ABLATIONS = ("netstorm-r1", "netstorm-single-path", "netstorm-frozen")
NAMES = {"mxnet": "MXNET (PS star)", "mxnet-widest": "PS star, widest-path routes",
         "mlnet": "MLNET", "tsengine": "TSEngine", "netstorm": "NetStorm",
         "netstorm-r1": "NetStorm, R = 1",
         "netstorm-single-path": "NetStorm, one path", "netstorm-frozen": "NetStorm, frozen"}
NETWORKS = ("static", "dynamic")
LEVELS = (0.80, 0.85)
COLUMNS = ("network", "system", "runs", "failed", "iterations_median",
           *(f"tta_{round(100 * level)}_{stat}" for level in LEVELS
             for stat in ("median_s", "min_s", "max_s", "reached")),
           *(f"speedup_{round(100 * level)}_{stat}" for level in LEVELS for stat in ("median", "min", "max")),
           "sync_median_s", "sync_min_s", "sync_max_s", "t_lb_s", "t_opt_s",
           "sync_over_t_lb_median", "sync_over_t_lb_min", "sync_over_t_lb_max")


def split(setting):
    """(network, system, seed) of a setting: its variant is NETWORK-SYSTEM."""
    network, _, system = setting["variant"]["name"].partition("-")
    return network, system, setting.get("seed", setting.get("experiment.seed", 0))


def run_numbers(record):
    return {**record.sync(), "iterations": record.summary.get("iterations"),
            "t_opt": record.summary.get("sync_t_opt"), **record.times_to(LEVELS)}


def table(runs_dir):
    """One row per network and system (COLUMNS), from the records alone."""
    kept, failed = records.load(runs_dir)
    numbers = records.by_seed(kept, split, run_numbers)
    out = []
    for network in NETWORKS:
        for system in (*SYSTEMS, *ABLATIONS):
            mine = numbers.get((network, system), {})
            lost = sum(1 for f in failed if split(f["setting"])[:2] == (network, system))
            if not mine and not lost:
                continue
            runs = list(mine.values())
            row = {"network": network, "system": system, "runs": len(runs), "failed": lost,
                   "iterations_median": describe([m["iterations"] for m in runs])["median"],
                   **spread("sync", describe([m["sync"] for m in runs]), "_s"),
                   "t_lb_s": describe([m["t_lb"] for m in runs])["median"],
                   "t_opt_s": describe([m["t_opt"] for m in runs])["median"],
                   **spread("sync_over_t_lb", describe([m["over"] for m in runs]))}
            star = numbers.get((network, "mxnet"), {})
            for level in LEVELS:
                key = f"tta_{round(100 * level)}"
                row.update(tta_columns(runs, key))
                # > 1: this system reaches the level that many times sooner than the star.
                row.update(spread(f"speedup_{round(100 * level)}", paired(star, mine, key)))
            out.append(row)
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

    fig, (acc_axes, (tta_ax, sync_ax)) = plt.subplots(2, 2, figsize=(13, 9))
    lines = records.evals_by(runs_dir, lambda s: split(s)[:2])
    for ax, network in zip(acc_axes, NETWORKS):
        every_run(ax, [(NAMES[s], lines.get((network, s), [])) for s in SYSTEMS], 0.85,
                  f"{network} network: every run")
    shown = [s for s in (*SYSTEMS, *ABLATIONS) if any(t["system"] == s for t in got)]

    def cells(system, key):
        rows_ = [next((t for t in got if t["network"] == n and t["system"] == system), None)
                 for n in NETWORKS]
        return [t and (t[f"{key}_min_s"], t[f"{key}_median_s"], t[f"{key}_max_s"]) for t in rows_], rows_

    median_bars(tta_ax, NETWORKS, [(NAMES[s], cells(s, "tta_85")[0]) for s in shown], log=True)
    tta_ax.set(ylabel="time to 85% test accuracy (s, log scale)",
               title="time to 85% (median of runs, min-max)")
    tta_ax.set_ylim(top=tta_ax.get_ylim()[1] * 8)       # room for the legend above the bars
    tta_ax.legend(fontsize=7, loc="upper center", ncol=3)
    median_bars(sync_ax, NETWORKS, [(NAMES[s], cells(s, "sync")[0]) for s in shown],
                bounds=[[t and t["t_lb_s"] for t in cells(s, "sync")[1]] for s in shown], log=True)
    sync_ax.set(ylabel="sync time per iteration (s, log scale)",
                title="sync from the last start (median, min-max);\ndashes: t_lb of the links as they were")
    fig.suptitle("NetStorm's 9-DC WAN scaled 25x down, no added delay; a 0.95 MB MLP on digits, "
                 "37.5 ms steps, 9 workers, SSGD", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
