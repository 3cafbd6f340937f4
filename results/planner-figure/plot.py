"""planner-figure: every system's sync time per iteration divided by the
lower bound of the WAN as it was while it ran (testbed/bounds/timeline.py),
on NetStorm's 9-DC WAN (static and dynamic) and the ps-scaling WAN; where
the planner's remaining gap goes; and time to accuracy of NetStorm and the
planner training the MLP.

A synchronization is timed from when its last contributor handed over its
update (timeline.spent), as t_lb assumes every contribution ready at once;
`push_to_pull_over_t_lb` keeps the count from each worker's own hand-over,
which adds the previous iteration's spread of finishing times.

For the planner's runs the gap is split in three, from its last plan: the
plan's own time on the links as they really were (its rate, evaluated on
the true capacities, plus what the plan adds to M / R: its slices' fills,
as estimated, or its pipeline latency for a plan sized by rate) over t_lb
is what planning lost (estimation error, two trees per root, the routers'
single paths, the fills); the plan as made, on the estimates, over that
is the estimates' error (and, with `overheads: 1`, what the plan leaves of
each link for the probes, the ACKs and the segments' headers); the
measured time over the plan as made is what carrying it out lost (pacing,
segment pipelining, the protocol).  On the dynamic WAN the same split is
made per iteration, with the plan released for it held against the links
as they were while it ran (`plan_times_as_run`), and the medians taken."""

import glob
import os
import statistics

from agents.events import read_events
from agents.planning.evaluate import link_shares
from testbed import spec as specmod
from testbed.analysis import report
from testbed.analysis.iterations import iters_of, per_iteration, steady_ratios
from testbed.analysis.stats import write_table
from testbed.bounds import wan_of
from testbed.bounds.timeline import slowest_syncs, time_to_carry, wan_states
from testbed.records.runfolder import RunFolder
from testbed.run.runner import router_paths

SYSTEMS = ("star", "mlnet", "tsengine", "netstorm", "planner")
NAMES = {"star": "PS star", "mlnet": "MLNET", "tsengine": "TSEngine", "netstorm": "NetStorm",
         "planner": "planner"}
# Narrow labels, a few words a line: fifteen settings share one panel's width.
NETWORKS = {"static-1mb": "9-DC\nstatic\n1 MB", "static-10mb": "9-DC\nstatic\n10 MB",
            "static-10mb-quarter": "9-DC\nstatic\n10 MB\n\u00bc rate",
            "static-40mb-quarter": "9-DC\nstatic\n40 MB\n\u00bc rate",
            "static-40mb-quarter-probe2": "9-DC\nstatic\n40 MB\n\u00bc rate\nprobes 2%",
            "static-40mb-quarter-steady2": "9-DC\nstatic\n40 MB\n\u00bc rate\nprobes 2%\nif steady",
            "dynamic-2mb": "9-DC\ndynamic\n10 s\n2.5 MB",
            "dynamic-2mb-draw1": "9-DC\ndynamic\n10 s\n2.5 MB\n2nd draw",
            "dynamic-2mb-draw2": "9-DC\ndynamic\n10 s\n2.5 MB\n3rd draw",
            "dynamic50-2mb": "9-DC\ndynamic\n50 s\n2.5 MB",
            "dynamic50-2mb-draw1": "9-DC\ndynamic\n50 s\n2.5 MB\n2nd draw",
            "dynamic50-2mb-draw2": "9-DC\ndynamic\n50 s\n2.5 MB\n3rd draw",
            "dynamic-2mb-dispatch": "9-DC\ndynamic\n10 s\n2.5 MB\ndispatched",
            "dynamic-2mb-draw1-dispatch": "9-DC\ndynamic\n10 s\n2.5 MB\n2nd draw\ndispatched",
            "dynamic-2mb-draw2-dispatch": "9-DC\ndynamic\n10 s\n2.5 MB\n3rd draw\ndispatched",
            "dynamic-2mb-again": "9-DC\ndynamic\n10 s\n2.5 MB\n2nd run",
            "dynamic-2mb-again-dispatch": "9-DC\ndynamic\n10 s\n2.5 MB\n2nd run\ndispatched",
            "dynamic-2mb-draw1-again": "9-DC\ndynamic\n10 s\n2.5 MB\n2nd draw\n2nd run",
            "dynamic-2mb-draw1-again-dispatch": "9-DC\ndynamic\n10 s\n2.5 MB\n2nd draw\n2nd run\ndispatched",
            "dynamic-2mb-draw2-again": "9-DC\ndynamic\n10 s\n2.5 MB\n3rd draw\n2nd run",
            "dynamic-2mb-draw2-again-dispatch": "9-DC\ndynamic\n10 s\n2.5 MB\n3rd draw\n2nd run\ndispatched",
            "dynamic-2mb-steady2": "9-DC\ndynamic\n10 s\n2.5 MB\nprobes 2%\nif steady",
            "dynamic50-2mb-steady2": "9-DC\ndynamic\n50 s\n2.5 MB\nprobes 2%\nif steady",
            "ps-10mb": "ps-\nscaling\n10 MB"}
DYNAMIC = {"dynamic-2mb": ("-", "10 s"), "dynamic50-2mb": ("--", "50 s")}   # line style, redraw period
LEVELS = (0.90, 0.95)
COLUMNS = ("network", "system", "status", "iterations", "model_mb", "sync_s", "t_lb_s",
           "sync_over_t_lb", "settled_over_t_lb", "push_to_pull_over_t_lb", "planned_s", "planned_true_s",
           "plan_over_t_lb", "planned_over_t_lb", "sync_over_plan", "sync_over_planned", "final_accuracy",
           *(f"tta_{round(level * 100)}_s" for level in LEVELS), "cpu_busy", "cpu_saturated",
           "cpu_stolen")


def split_label(name):
    network, _, system = name.rpartition("-")
    return network, system


def plan_times(run, spec_doc, changes, model_bytes):
    """(planned, planned on the true links) seconds of the planner's last
    plan: its rate and what it adds to M / R (its latency, or its slices'
    fills) as planned from estimates, and the same connections' loads on
    the capacities in force when it was released."""
    decisions = [e for e in read_events(os.path.join(run, "agents", coordinator(run)))
                 if e["ev"] == "decision" and "loads" in e]
    if not decisions:
        return None, None
    last = decisions[-1]
    share, rate, extra = plan_shares(last, topology_paths(run), model_bytes)
    state = [s for t, s in wan_states(spec_doc, changes) if t <= last["wall"]][-1]
    capacity = {link: c for link, (c, _) in wan_of(state).links.items()}
    true_time = max(model_bytes * s / capacity[link] for link, s in share.items())
    return model_bytes / rate + extra, true_time + extra


def topology_paths(run):
    """The routers' path between every two DCs of a run's topology."""
    return router_paths(specmod.load(os.path.join(run, "topo.yaml")))


def plan_shares(decision, paths, model_bytes):
    """({link: share of the model it carries}, payload bytes/s, what the
    plan adds to M / R: its latency, or its slices' fills) of one of the
    coordinator's decisions, its connections over the routers' `paths`."""
    rate = decision["rate"] / 8
    extra = decision["finish"] - model_bytes / rate if decision.get("finish") else decision["latency"]
    return link_shares(decision["loads"], decision["rate"], paths), rate, extra


def plan_times_as_run(run, spec_doc, changes, iters, model_bytes):
    """{iteration: (planned, planned on the links while it ran)} seconds,
    for a run whose links changed: the plan in force at each iteration (the
    last released for it) as made, and on the links as they were from when
    the iteration's last worker began, every link kept full: a link that
    carries a share s of the model is done once its changing rate has
    carried s M, the plan once its last link is, plus what the plan adds to
    M / R.  No plan that holds its shape through the iteration does better;
    what it loses to a redraw is what re-planning only at iteration
    boundaries costs."""
    releases = [e for e in read_events(os.path.join(run, "agents", coordinator(run)))
                if e["ev"] == "decision" and e.get("decision") == "release" and "loads" in e]
    states = [(t, wan_of(state).links) for t, state in wan_states(spec_doc, changes)]
    paths = topology_paths(run)
    out = {}
    for it, (took, began) in slowest_syncs(iters, from_last_start=True).items():
        released = [e for e in releases if e["it"] <= it]
        if not released:
            continue
        share, rate, extra = plan_shares(released[-1], paths, model_bytes)
        first = max(i for i, (t, _) in enumerate(states) if t <= began)
        rates = [(max(t - began, 0.0), links) for t, links in states[first:]]
        done = max(time_to_carry([(t, links.get(link, (0.0, 0.0))[0]) for t, links in rates],
                                 model_bytes * s) for link, s in share.items())
        out[it] = (model_bytes / rate + extra, done + extra)
    return out


def plan_gap_as_run(plans, steady):
    """The gap columns of a run whose links changed, each the median over
    its iterations (`steady`: [(it, sync, t_lb)]) of that iteration's own
    ratio, and the medians of the plan's seconds."""
    its = [(plans[it], s, b) for it, s, b in steady if it in plans]
    if not its:
        return {}
    return {"planned_s": median(p for (p, _), _, _ in its),
            "planned_true_s": median(t for (_, t), _, _ in its),
            "plan_over_t_lb": median(t / b for (_, t), _, b in its),
            "sync_over_plan": median(s / t for (_, t), s, _ in its),
            "planned_over_t_lb": median(p / b for (p, _), _, b in its),
            "sync_over_planned": median(s / p for (p, _), s, _ in its)}


def coordinator(run):
    return next(os.path.basename(f) for f in glob.glob(os.path.join(run, "agents", "*-c.jsonl")))


def accuracy_curve(run):
    events, _, _ = report.load(RunFolder(run))
    t0 = report.run_start(events) or 0.0
    evals = sorted((e for evs in events.values() for e in evs if e["ev"] == "eval"),
                   key=lambda e: e["t"])
    return [(e["t"] - t0, e["accuracy"]) for e in evals]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(rows):
    table, series, curves = [], {}, {}
    for r in rows:
        network, system = split_label(r["variant"]["name"])
        row = {"network": network, "system": system, "status": r.get("status"),
               "iterations": r.get("iterations"), "final_accuracy": r.get("final_accuracy"),
               "cpu_busy": r.get("cpu_busy"), "cpu_saturated": r.get("cpu_saturated"),
               "cpu_stolen": r.get("cpu_stolen")}
        run = r.get("run")
        if run and "mlp" in network:
            points = accuracy_curve(run)
            curves[(network, system)] = points
            for level in LEVELS:
                row[f"tta_{round(level * 100)}_s"] = next((t for t, a in points if a >= level), None)
        elif run and r.get("model_bytes"):
            model = r["model_bytes"]
            its, push_to_pull, spec_doc, changes = per_iteration(run, model)
            steady = steady_ratios(its)
            ratios = [s / b for _, s, b in steady]
            series[(network, system)] = steady
            half = ratios[len(ratios) // 2:]
            row.update({"model_mb": model / 1e6, "sync_s": median(s for _, s, _ in steady),
                        "t_lb_s": median(b for _, _, b in steady),
                        "sync_over_t_lb": median(ratios), "settled_over_t_lb": median(half),
                        "push_to_pull_over_t_lb": median(s / b for it, s, b in push_to_pull
                                                         if it > 0 and b)})
            if system == "planner" and network.endswith("dispatch"):
                pass                # no plan fixes its trees' shares: nothing to evaluate on the links
            elif system == "planner" and network.startswith("dynamic"):
                row.update(plan_gap_as_run(plan_times_as_run(run, spec_doc, changes, iters_of(run), model),
                                           steady))
            elif system == "planner":
                planned, true = plan_times(run, spec_doc, changes, model)
                row.update({"planned_s": planned, "planned_true_s": true})
                if true and row["t_lb_s"]:
                    row["plan_over_t_lb"] = true / row["t_lb_s"]
                    row["sync_over_plan"] = row["sync_s"] / true
                    row["planned_over_t_lb"] = planned / row["t_lb_s"]
                    row["sync_over_planned"] = row["sync_s"] / planned
        table.append(row)
    return table, series, curves


def pooled(series):
    """{(redraw period, system): (median sync / t_lb, iterations)} over every
    iteration of every draw and run of a system on a dynamic WAN (the
    dispatched planner apart; the runs with a steady budget left out): one
    run's median moves by up to 0.4x t_lb on the 10 s WAN."""
    out = {}
    for (network, system), points in series.items():
        if "steady2" in network or not network.startswith(("dynamic-2mb", "dynamic50-2mb")):
            continue
        period = "10 s" if network.startswith("dynamic-2mb") else "50 s"
        name = NAMES[system] + (", dispatched" if network.endswith("dispatch") else "")
        out.setdefault((period, name), []).extend(s / b for _, s, b in points)
    return {k: (statistics.median(v), len(v)) for k, v in sorted(out.items())}


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table, series, curves = summarize(rows)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(table, csv_path, COLUMNS)
    pools = pooled(series)
    for (period, name), (ratio, n) in pools.items():
        netstorm = pools.get((period, NAMES["netstorm"]), (None,))[0]
        against = netstorm and name != NAMES["netstorm"]
        speed = f", {netstorm / ratio:.2f}x NetStorm's speed" if against else ""
        print(f"pooled, redrawn every {period}: {name} {ratio:.2f}x t_lb over {n} iterations{speed}")
    # The left column twice as wide: some twenty settings share the bars' panel.
    fig, ((bars, dynamic), (gap, acc)) = plt.subplots(2, 2, figsize=(22, 9.5),
                                                      gridspec_kw={"width_ratios": [2, 1]})
    width = 0.16
    nets = [n for n in NETWORKS if any(t["network"] == n for t in table)]
    for i, system in enumerate(SYSTEMS):
        xs, ys = [], []
        for x, network in enumerate(nets):
            row = next((t for t in table if (t["network"], t["system"]) == (network, system)), None)
            if row and row.get("sync_over_t_lb"):
                xs.append(x + (i - 2) * width)
                ys.append(row["sync_over_t_lb"])
        bars.bar(xs, ys, width, color=f"C{i}", label=NAMES[system])
        for x, y in zip(xs, ys):
            # Two decimals near the goal, where 1.15 and 1.2 must read apart.
            bars.annotate(f"{y:.2f}" if y < 10 else f"{y:.1f}", (x, y), textcoords="offset points",
                          xytext=(0, 2), ha="center", fontsize=6)
    bars.axhline(1.2, color="k", linestyle="--", linewidth=0.8)
    bars.set_xticks(range(len(nets)))
    bars.set_xticklabels([NETWORKS[n] for n in nets], fontsize=6.5)
    bars.set(yscale="log", ylabel="sync time from the last start / t_lb (median)",
             title="sync time per iteration over the lower bound (dashes: 1.2)")
    bars.legend(fontsize=7)
    for network, (style, every) in DYNAMIC.items():
        for i, system in enumerate(SYSTEMS):
            points = series.get((network, system))
            if points:
                dynamic.plot([it for it, _, _ in points], [s / b for _, s, b in points], style, marker="o",
                             color=f"C{i}", label=f"{NAMES[system]}, redrawn every {every}")
    dynamic.set(xlabel="iteration", ylabel="sync time / t_lb of its links",
                title="dynamic 9-DC WAN: each iteration against the bound of its links")
    dynamic.grid(alpha=0.3)
    if dynamic.lines:
        dynamic.legend(fontsize=8)
    # On a changing WAN: medians of each iteration's plan on the links while it ran.
    mine = [t for t in table if t["system"] == "planner" and t.get("planned_true_s")]
    bars = (("t_lb_s", "0.6", "t_lb"), ("planned_true_s", "C2", "plan on the links as they were"),
            ("planned_s", "#a6d96a", "plan as made, on the estimates"),
            ("sync_s", "C4", "measured"))
    for x, t in enumerate(mine):
        for k, (key, color, label) in enumerate(bars):
            gap.bar(x + 0.2 * (k - 1.5), t[key], 0.2, color=color, label=label if x == 0 else None)
    gap.set_xticks(range(len(mine)))
    gap.set_xticklabels([NETWORKS.get(t["network"], t["network"]) for t in mine], fontsize=6.5)
    # Log scale: the 40 MB settings take some seventy times the 1 MB one.
    gap.set(yscale="log", ylabel="seconds per synchronization", title="where the planner's gap goes")
    if mine:
        gap.legend(fontsize=8)
    styles = {"static-mlp": "-", "dynamic-mlp": "--"}
    for (network, system), points in sorted(curves.items()):
        acc.plot([t for t, _ in points], [a for _, a in points], styles.get(network, ":"),
                 color=f"C{SYSTEMS.index(system)}", label=f"{NAMES[system]}, {network.split('-')[0]}")
    acc.set(xlabel="wall time (s)", ylabel="test accuracy", ylim=(0.5, 1.0),
            title="MLP on digits over the 9-DC WAN")
    acc.grid(alpha=0.3)
    if acc.lines:
        acc.legend(fontsize=8, loc="lower right")
    fig.suptitle("Our planner against the seed systems, SSGD, one server and one worker per DC",
                 fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
