"""planner-dynamic: NetStorm against the planner's steered dispatch on
NetStorm's 9-DC WAN redrawn every 10 s, each synchronization divided by t_lb
of the links as they were while it ran (testbed/analysis/iterations.py), and the
same steering against the planner's fixed plan on the static WAN.

A run's settings are read from its name, SETTING[-drawD-runR]-SYSTEM.  The
verdict is taken over every iteration but the first of every draw and run
of a system (`pooled`): one run's median moves by up to 0.4x t_lb on this
WAN, and the pairs ran side by side, so the machine's drift meets both.
The speed-up is the baseline's pooled median over the other system's
(`speedups`); the goal line is 1.3x NetStorm's speed."""

import os
import re
import statistics

from testbed.analysis.iterations import per_iteration, steady_ratios
from testbed.analysis.stats import write_table
from testbed.sweeps.sweep import RecipeError

SYSTEMS = ("netstorm", "fixed", "steered")
COLORS = {"netstorm": "C3", "fixed": "C0", "steered": "C4"}
NAMES = {"netstorm": "NetStorm", "fixed": "planner, fixed plan", "steered": "planner, steered dispatch"}
BASELINE = {"dynamic": "netstorm", "static-10mb-quarter": "fixed"}
SETTINGS = {"dynamic": "9-DC WAN redrawn every 10 s, 2.5 MB",
            "static-10mb-quarter": "9-DC WAN static, \u00bc rate, 10 MB"}
GOAL = 1.3
COLUMNS = ("setting", "draw", "run", "system", "status", "iterations", "sync_s", "t_lb_s", "sync_over_t_lb",
           "speedup", "cpu_busy", "cpu_saturated", "cpu_stolen")
NAME = re.compile(r"^(?P<setting>.+?)(-draw(?P<draw>\d+)-run(?P<run>\d+))?-(?P<system>[a-z]+)$")


def parse(name):
    """(setting, draw, run, system) of a variant's name; draw and run are
    None for a setting with one run.  A name of another shape is the
    recipe's error, said in one sentence by `testbed reproduce`."""
    m = NAME.match(name)
    if not m:
        raise RecipeError(f"planner-dynamic: variant {name!r} is not named SETTING[-drawD-runR]-SYSTEM")
    draw, run = m["draw"], m["run"]
    return m["setting"], int(draw) if draw else None, int(run) if run else None, m["system"]


def median(values):
    values = list(values)
    return statistics.median(values) if values else None


def pooled(series):
    """{(setting, system): (median sync / t_lb, iterations)} over every
    iteration of every draw and run of a system."""
    out = {}
    for (setting, _, _, system), points in series.items():
        out.setdefault((setting, system), []).extend(s / b for _, s, b in points)
    return {k: (statistics.median(v), len(v)) for k, v in sorted(out.items()) if v}


def speedups(pools):
    """{(setting, system): the setting's baseline's pooled sync / t_lb over
    this system's}: how many times faster it synchronizes."""
    out = {}
    for (setting, system), (ratio, _) in pools.items():
        base = pools.get((setting, BASELINE.get(setting)))
        if base and system != BASELINE.get(setting):
            out[(setting, system)] = base[0] / ratio
    return out


def summarize(rows):
    """(a table row per run, {(setting, draw, run, system): [(it, sync, t_lb)]})."""
    table, series = [], {}
    for r in rows:
        key = parse(r["variant"]["name"])
        setting, draw, run, system = key
        row = {"setting": setting, "draw": draw, "run": run, "system": system, "status": r.get("status"),
               "iterations": r.get("iterations"), "cpu_busy": r.get("cpu_busy"),
               "cpu_saturated": r.get("cpu_saturated"), "cpu_stolen": r.get("cpu_stolen")}
        if r.get("run") and r.get("model_bytes"):
            steady = steady_ratios(per_iteration(r["run"], r["model_bytes"])[0])
            series[key] = steady
            row.update({"sync_s": median(s for _, s, _ in steady), "t_lb_s": median(b for _, _, b in steady),
                        "sync_over_t_lb": median(s / b for _, s, b in steady)})
        table.append(row)
    return table, series


def pooled_rows(series):
    """The table's rows for each system over all its draws and runs."""
    pools = pooled(series)
    gains = speedups(pools)
    return [{"setting": setting, "draw": "all", "run": "all", "system": system, "iterations": n,
             "sync_over_t_lb": ratio, "speedup": gains.get((setting, system))}
            for (setting, system), (ratio, n) in pools.items()]


def bar_panel(ax, setting, table, pools):
    """One setting's bars: each run's median, then every iteration pooled,
    with the goal drawn over the pooled baseline where NetStorm is it."""
    mine = [t for t in table + pools if t["setting"] == setting and t.get("sync_over_t_lb")]
    runs = sorted({(t["draw"], t["run"]) for t in mine if t["draw"] != "all"}, key=str)
    # A setting run once per system: its pooled bars are that run's.
    groups = (runs if len(runs) > 1 else []) + [("all", "all")]
    systems = [s for s in SYSTEMS if any(t["system"] == s for t in mine)]
    width = 0.8 / max(len(systems), 1)
    for i, system in enumerate(systems):
        for x, group in enumerate(groups):
            row = next((t for t in mine if (t["draw"], t["run"], t["system"]) == (*group, system)), None)
            if not row:
                continue
            xpos = x + (i - (len(systems) - 1) / 2) * width
            y = row["sync_over_t_lb"]
            last = x == len(groups) - 1
            ax.bar(xpos, y, width, color=COLORS[system], label=NAMES[system] if last else None)
            gain = f"\n{row['speedup']:.2f}x" if row.get("speedup") else ""
            ax.annotate(f"{y:.2f}{gain}", (xpos, y), textcoords="offset points", xytext=(0, 2), ha="center",
                        fontsize=7)
            if group == ("all", "all") and system == "netstorm" == BASELINE[setting]:
                ax.hlines(y / GOAL, x - 0.45, x + 0.45, colors="k", linestyles="--", linewidth=0.8,
                          label=f"{GOAL}x NetStorm's speed")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([("pooled" if runs[1:] else "one run each") if d == "all" else f"draw {d}\nrun {r}"
                        for d, r in groups], fontsize=7)
    ax.set(ylabel="sync time from the last start / t_lb (median)", title=SETTINGS.get(setting, setting))
    if ax.patches:
        ax.legend(fontsize=7, loc="lower left")


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table, series = summarize(rows)
    pools = pooled_rows(series)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(table + pools, csv_path, COLUMNS)
    for p in pools:
        gain = f", {p['speedup']:.2f}x {NAMES[BASELINE[p['setting']]]}'s speed" if p["speedup"] else ""
        print(f"{SETTINGS.get(p['setting'], p['setting'])}: {NAMES[p['system']]} "
              f"{p['sync_over_t_lb']:.2f}x t_lb over {p['iterations']} iterations{gain}")

    # A panel for each setting the sweep ran (`--quick` runs the redrawn WAN only), then the distribution.
    settings = [s for s in SETTINGS if any(t["setting"] == s for t in table)]
    widths = [3 if s == "dynamic" else 1 for s in settings] + [2]
    fig, axes = plt.subplots(1, len(widths), figsize=(4 + 2 * sum(widths), 5),
                             gridspec_kw={"width_ratios": widths})
    for ax, setting in zip(axes, settings):
        bar_panel(ax, setting, table, pools)
    cdf = axes[-1]
    for system in SYSTEMS:
        ratios = sorted(s / b for (setting, _, _, sys_), points in series.items()
                        if setting == "dynamic" and sys_ == system for _, s, b in points)
        if ratios:
            cdf.step(ratios, [(k + 1) / len(ratios) for k in range(len(ratios))], where="post",
                     color=COLORS[system], label=f"{NAMES[system]} ({len(ratios)} iterations)")
    cdf.set(xlabel="sync time / t_lb of its links", ylabel="fraction of iterations",
            title="redrawn every 10 s: every iteration of every draw and run")
    cdf.grid(alpha=0.3)
    if cdf.lines:
        cdf.legend(fontsize=8, loc="lower right")
    fig.suptitle("The planner's steered dispatch against NetStorm, SSGD, one server and one worker per DC "
                 f"(goal: {GOAL}x NetStorm's speed)", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
