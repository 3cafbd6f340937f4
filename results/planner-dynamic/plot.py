"""planner-dynamic: NetStorm against the planner's steered dispatch on
NetStorm's 9-DC WAN redrawn every 10 s, each synchronization divided by
t_lb of the links as they were while it ran.  Left: each draw's median
over its iterations, and the median over the draws with min-max bars,
against the bound (1) and the goal (NetStorm's median over 1.3); right:
every iteration of every draw as a distribution.

draw() keeps each completed run's records (testbed/analysis/records.py)
and computes table.csv from them alone (`table`).  Per run: the median
over its iterations after the first of the slowest worker's sync counted
from the last start over `t_lb` of the links as they were
(`Record.sync`).  Per system: the median, min and max of that over the
draws; the speedup is the median, min and max of the per-draw ratios of
NetStorm's to the planner's (both met the same rates on a draw), and the
pooled columns take every iteration of every draw at once."""

import os
import statistics

from testbed.analysis import records
from testbed.analysis.stats import describe, paired, spread, write_table

SYSTEMS = ("netstorm", "steered")
COLORS = {"netstorm": "C3", "steered": "C4"}
NAMES = {"netstorm": "NetStorm", "steered": "planner, steered dispatch"}
BASELINE = "netstorm"
GOAL = 1.3
COLUMNS = ("draw", "system", "runs", "failed", "iterations", "sync_median_s", "t_lb_median_s",
           "sync_over_t_lb_median", "sync_over_t_lb_min", "sync_over_t_lb_max",
           "speedup_median", "speedup_min", "speedup_max", "pooled_sync_over_t_lb", "pooled_speedup")


def split(setting):
    """(draw, system) of a setting."""
    return setting.get("dynamics_seed", 0), setting["variant"]["name"]


def ratios(record):
    """Each steady iteration's sync counted from the last start over its t_lb."""
    return [s["from_last_start_s"] / s["t_lb_s"] for s in record.steady_steps()
            if s["from_last_start_s"] and s["t_lb_s"]]


def table(runs_dir):
    """A row per draw and system, then one per system over every draw."""
    kept, failed = records.load(runs_dir)
    runs = {split(r.setting): r for r in kept}
    draws = sorted({d for d, _ in runs} | {split(f["setting"])[0] for f in failed})
    out = []
    for draw in draws:
        for system in SYSTEMS:
            r = runs.get((draw, system))
            lost = sum(1 for f in failed if split(f["setting"]) == (draw, system))
            if r is None and not lost:
                continue
            row = {"draw": draw, "system": system, "runs": int(r is not None), "failed": lost}
            if r is not None:
                sync = r.sync()
                row.update({"iterations": len(ratios(r)), "sync_median_s": sync["sync"],
                            "t_lb_median_s": sync["t_lb"], "sync_over_t_lb_median": sync["over"]})
            out.append(row)
    for system in SYSTEMS:
        mine = {d: r for (d, s), r in runs.items() if s == system}
        lost = sum(1 for f in failed if split(f["setting"])[1] == system)
        if not mine and not lost:
            continue
        overs = {d: {"over": r.sync()["over"]} for d, r in mine.items()}
        base = {d: {"over": r.sync()["over"]} for (d, name), r in runs.items() if name == BASELINE}
        pooled = {s: statistics.median(x for (d, name), r in runs.items() if name == s for x in ratios(r))
                  for s in (system, BASELINE) if any(name == s for _, name in runs)}
        out.append({"draw": "all", "system": system, "runs": len(mine), "failed": lost,
                    "iterations": sum(len(ratios(r)) for r in mine.values()),
                    **spread("sync_over_t_lb", describe([o["over"] for o in overs.values()])),
                    # > 1: the system synchronizes that many times faster than NetStorm on the same draw.
                    **spread("speedup", paired(base, overs, "over")),
                    "pooled_sync_over_t_lb": pooled.get(system),
                    "pooled_speedup": pooled[BASELINE] / pooled[system] if BASELINE in pooled else None})
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
    for t in got:
        if t["draw"] == "all" and t["speedup_median"]:
            print(f"{NAMES[t['system']]}: {t['sync_over_t_lb_median']:.2f}x t_lb (median of {t['runs']} draws), "
                  f"{t['speedup_median']:.2f}x NetStorm's speed ({t['speedup_min']:.2f}-{t['speedup_max']:.2f})")

    fig, (bars, cdf) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    draws = sorted({t["draw"] for t in got if t["draw"] != "all"})
    groups = [f"draw {d}" for d in draws] + ["median of draws\n(min-max)"]
    width = 0.8 / len(SYSTEMS)
    for i, system in enumerate(SYSTEMS):
        x_off = (i - (len(SYSTEMS) - 1) / 2) * width
        for x, d in enumerate(draws):
            row = next((t for t in got if t["draw"] == d and t["system"] == system), None)
            if row and row.get("sync_over_t_lb_median"):
                bars.bar(x + x_off, row["sync_over_t_lb_median"], width, color=COLORS[system])
        total = next((t for t in got if t["draw"] == "all" and t["system"] == system), None)
        if total and total["sync_over_t_lb_median"]:
            m = total["sync_over_t_lb_median"]
            bars.bar(len(draws) + x_off, m, width, color=COLORS[system], label=NAMES[system],
                     yerr=[[m - total["sync_over_t_lb_min"]], [total["sync_over_t_lb_max"] - m]], capsize=3)
            if system == BASELINE:
                bars.hlines(m / GOAL, len(draws) - 0.45, len(draws) + 0.45, colors="k", linestyles="--",
                            lw=0.8, label=f"goal: {GOAL}x NetStorm's speed")
            elif total["speedup_median"]:
                bars.annotate(f"{total['speedup_median']:.2f}x", (len(draws) + x_off, total["sync_over_t_lb_max"]),
                              textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
    bars.axhline(1, color="k", lw=1, label="t_lb (the bound)")
    bars.set_xticks(range(len(groups)))
    bars.set_xticklabels(groups, fontsize=8)
    top = max((t.get("sync_over_t_lb_max") or t.get("sync_over_t_lb_median") or 0) for t in got)
    bars.set(ylabel="sync time from the last start / t_lb (median over iterations)", ylim=(0, 1.4 * top),
             title="9-DC WAN redrawn every 10 s, 2.5 MB, draws 3-5 (not used to tune the planner)")
    bars.legend(fontsize=8, loc="upper left")
    for system in SYSTEMS:
        xs = sorted(x for r in records.load(runs_dir)[0] if split(r.setting)[1] == system for x in ratios(r))
        if xs:
            cdf.step(xs, [(k + 1) / len(xs) for k in range(len(xs))], where="post", color=COLORS[system],
                     label=f"{NAMES[system]} ({len(xs)} iterations)")
    cdf.axvline(1, color="k", lw=1)
    cdf.set(xlabel="sync time / t_lb of its links", ylabel="fraction of iterations",
            title="every iteration of every draw")
    cdf.grid(alpha=0.3)
    if cdf.lines:
        cdf.legend(fontsize=8, loc="lower right")
    fig.suptitle("The planner's steered dispatch against NetStorm, SSGD, one server and one worker per DC",
                 fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path, csv_path]
