"""planner-figure: every system's sync time per iteration divided by t_lb,
the lower bound of the WAN, on NetStorm's 9-DC WAN (1 MB at half its
rates, 40 MB at a quarter) and on the ps-scaling WAN, three seeds each.

draw() keeps each completed run's records (testbed/analysis/records.py),
with the planner's last plan in each planner run's extra.json, and
computes table.csv from them alone (`table`).  Per run: the median over
its iterations after the first of the slowest worker's sync counted from
the last start (when its last contributor handed over its update, as
t_lb has every contribution ready at once) over t_lb (`Record.sync`).
Per network and system: the median, min and max of that over the seeds;
the planner's speedup over a system is the median, min and max of the
per-seed ratios of that system's to the planner's (both ran with the same
seed).  For the planner, where its gap goes: its last plan evaluated on
the configured links (its connections' loads over the routers' paths,
plus its slices' fills) over t_lb is what planning left, and the
measured sync over that plan is what carrying it out added."""

import glob
import os

from agents.events import read_events
from agents.planning.evaluate import link_shares
from testbed import spec as specmod
from testbed.analysis import records
from testbed.analysis.iterations import per_iteration
from testbed.analysis.stats import describe, paired, ratio, spread, write_table
from testbed.bounds import wan_of
from testbed.bounds.timeline import wan_states
from testbed.run.runner import router_paths

SYSTEMS = ("star", "mlnet", "tsengine", "netstorm", "planner")
NAMES = {"star": "PS star", "mlnet": "MLNET", "tsengine": "TSEngine", "netstorm": "NetStorm",
         "planner": "planner"}
NETWORKS = {"static-1mb": "9-DC WAN, half rates (10/2 Mbit/s), 1 MB",
            "static-40mb": "9-DC WAN, quarter rates (5/1 Mbit/s), 40 MB",
            "ps-10mb": "ps-scaling WAN (25 Mbit/s), 10 MB"}
PLANNER = "planner"
# Where bandwidth dominates, the planner's goal is a sync within this of t_lb.
GOAL = 1.2
COLUMNS = ("network", "system", "runs", "failed", "iterations", "model_mb", "t_lb_s", "t_opt_over_t_lb",
           "sync_median_s", "sync_over_t_lb_median", "sync_over_t_lb_min", "sync_over_t_lb_max",
           "planner_speedup_median", "planner_speedup_min", "planner_speedup_max",
           "plan_over_t_lb", "sync_over_plan", "cpu_busy", "cpu_saturated")


def split(setting):
    """(network, system, seed) of a setting."""
    network, _, system = setting["variant"]["name"].rpartition("-")
    return network, system, setting.get("seed", 0)


def coordinator(run):
    return next(os.path.basename(f) for f in glob.glob(os.path.join(run, "agents", "*-c.jsonl")))


def plan_shares(decision, paths, model_bytes):
    """({link: share of the model it carries}, payload bytes/s, what the
    plan adds to M / R: its latency, or its slices' fills) of one of the
    coordinator's decisions, its connections over the routers' `paths`."""
    rate = decision["rate"] / 8
    extra = decision["finish"] - model_bytes / rate if decision.get("finish") else decision["latency"]
    return link_shares(decision["loads"], decision["rate"], paths), rate, extra


def plan_times(run, spec_doc, changes, model_bytes):
    """(planned, planned on the true links) seconds of the planner's last
    plan: its rate and what it adds to M / R as planned from estimates, and
    the same connections' loads on the capacities in force when it was
    released (None, None for a run without a plan)."""
    decisions = [e for e in read_events(os.path.join(run, "agents", coordinator(run)))
                 if e["ev"] == "decision" and "loads" in e]
    if not decisions:
        return None, None
    last = decisions[-1]
    paths = router_paths(specmod.load(os.path.join(run, "topo.yaml")))
    share, rate, extra = plan_shares(last, paths, model_bytes)
    state = [s for t, s in wan_states(spec_doc, changes) if t <= last["wall"]][-1]
    capacity = {link: c for link, (c, _) in wan_of(state).links.items()}
    true_time = max(model_bytes * s / capacity[link] for link, s in share.items())
    return model_bytes / rate + extra, true_time + extra


def last_plan(run, summary):
    """extra.json of a planner run: its last plan's seconds, as made and on
    the true links."""
    if summary.get("overlay") != PLANNER or not summary.get("model_bytes"):
        return None
    _, _, spec_doc, changes = per_iteration(run, summary["model_bytes"])
    planned, true = plan_times(run, spec_doc, changes, summary["model_bytes"])
    return {"planned_s": planned, "planned_true_s": true} if true else None


def run_numbers(record):
    """What the table takes from one run's record."""
    sync = record.sync()
    plan = record.extra.get("planned_true_s")
    return {**sync, "plan_over": ratio(plan, sync["t_lb"]), "sync_over_plan": ratio(sync["sync"], plan),
            "t_opt_over": ratio(record.summary.get("sync_t_opt"), sync["t_lb"]),
            "iterations": len(record.steady_steps()), "model_mb": (record.summary.get("model_bytes") or 0) / 1e6,
            "busy": (record.summary.get("cpu") or {}).get("busy"),
            "saturated": (record.summary.get("cpu") or {}).get("saturated")}


def median_of(values, key):
    return describe([v[key] for v in values])["median"]


def table(runs_dir):
    """A row per network and system, over its seeds."""
    kept, failed = records.load(runs_dir)
    runs = records.by_seed(kept, split, run_numbers)
    lost = [split(f["setting"])[:2] for f in failed]
    out = []
    for network in NETWORKS:
        planner = runs.get((network, PLANNER), {})
        for system in SYSTEMS:
            mine = runs.get((network, system), {})
            if not mine and (network, system) not in lost:
                continue
            v = list(mine.values())
            out.append({"network": network, "system": system, "runs": len(mine),
                        "failed": lost.count((network, system)), "iterations": sum(x["iterations"] for x in v),
                        "model_mb": median_of(v, "model_mb"), "t_lb_s": median_of(v, "t_lb"),
                        "t_opt_over_t_lb": median_of(v, "t_opt_over"), "sync_median_s": median_of(v, "sync"),
                        **spread("sync_over_t_lb", describe([x["over"] for x in v])),
                        # > 1: the planner synchronizes that many times faster with the same seed.
                        **spread("planner_speedup", paired(mine, planner, "over")),
                        "plan_over_t_lb": median_of(v, "plan_over"), "sync_over_plan": median_of(v, "sync_over_plan"),
                        "cpu_busy": median_of(v, "busy"),
                        "cpu_saturated": describe([x["saturated"] for x in v])["max"]})
    return out


def summary_lines(got):
    """One line per network: the planner over t_lb and its speedups."""
    lines = []
    for network in NETWORKS:
        rows = {t["system"]: t for t in got if t["network"] == network}
        mine = rows.get(PLANNER)
        if not mine or mine["sync_over_t_lb_median"] is None:
            continue
        speedups = ", ".join(f"{t['planner_speedup_median']:.2f}x {NAMES[s]}'s speed "
                             f"({t['planner_speedup_min']:.2f}-{t['planner_speedup_max']:.2f})"
                             for s, t in rows.items() if s != PLANNER and t["planner_speedup_median"])
        lines.append(f"{network}: planner {mine['sync_over_t_lb_median']:.3f}x t_lb "
                     f"({mine['sync_over_t_lb_min']:.3f}-{mine['sync_over_t_lb_max']:.3f}); {speedups}")
    return lines


def panel(ax, network, got, seeds):
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    rows = {t["system"]: t for t in got if t["network"] == network and t["sync_over_t_lb_median"]}
    systems = [s for s in SYSTEMS if s in rows]
    for x, system in enumerate(systems):
        row = rows[system]
        m = row["sync_over_t_lb_median"]
        ax.bar(x, m, 0.6, color=f"C{SYSTEMS.index(system)}",
               yerr=[[m - row["sync_over_t_lb_min"]], [row["sync_over_t_lb_max"] - m]], capsize=4)
        points = [v for v in seeds.get((network, system), {}).values() if v]
        ax.plot([x] * len(points), points, "o", color="k", ms=3, zorder=3)
        ax.annotate(f"{m:.2f}x", (x, row["sync_over_t_lb_max"]), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=8)
        if row.get("plan_over_t_lb"):
            ax.hlines(row["plan_over_t_lb"], x - 0.3, x + 0.3, colors="gold", lw=2.5,
                      label="the planner's last plan on the true links")
    ax.axhline(1, color="k", lw=1, label="t_lb (the bound)")
    t_opt = next((t["t_opt_over_t_lb"] for t in rows.values() if t["t_opt_over_t_lb"]), None)
    if t_opt and t_opt > 1.001:
        ax.axhline(t_opt, color="k", lw=0.8, ls=":", label="t_opt (best multipath schedule)")
    if network == "static-40mb":
        ax.axhline(GOAL, color="k", lw=0.8, ls="--", label=f"goal: {GOAL}x t_lb")
    top = max([row["sync_over_t_lb_max"] for row in rows.values()], default=2)
    ax.set(yscale="log", ylim=(0.8, 1.6 * top), title=NETWORKS[network])
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(systems)))
    ax.set_xticklabels([NAMES[s] for s in systems], fontsize=8)
    ax.title.set_fontsize(9)
    ax.grid(axis="y", alpha=0.3, which="both")


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs_dir = os.path.join(out_dir, records.RUNS)
    records.keep(rows, runs_dir, extra=last_plan)
    got = table(runs_dir)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(got, csv_path, COLUMNS)
    for line in summary_lines(got):
        print(line)
    networks = [n for n in NETWORKS if any(t["network"] == n for t in got)]
    fig, axes = plt.subplots(1, max(len(networks), 1), figsize=(5 * max(len(networks), 1), 4.8), squeeze=False)
    # Each seed's run as a dot: sync over t_lb by (network, system) and seed.
    seeds = records.by_seed(records.load(runs_dir)[0], split, lambda r: r.sync()["over"])
    for ax, network in zip(axes[0], networks):
        panel(ax, network, got, seeds)
    axes[0][0].set_ylabel("sync time from the last start / t_lb\n(median over iterations; bars: seeds' median, min-max)")
    handles = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=len(handles), fontsize=8)
    fig.suptitle("The planner against the seed systems, SSGD, one server and one worker per DC, "
                 "seeds 3-5 (dots)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path, csv_path]
