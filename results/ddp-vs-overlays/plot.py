"""ddp-vs-overlays: one synchronization's time for each system on the same
WAN and model, against t_lb.

draw() first keeps, per completed run, the small records the table is
computed from (testbed/analysis/records.py: runs/<setting>/summary.json
and iterations.csv, per iteration the slowest worker's time from handing
over its update to holding the new model, `sync_s`, the same counted from
when the last worker handed over its own, `from_last_start_s`, and t_lb
of the WAN), then computes table.csv from those records alone (`table`),
and draws the figure.

A DDP step is timed by the program (examples/programs/ddp_flat.py: when
each rank's backward, in which DDP all-reduces, began and ended); an
iteration of the star or the planner by its workers' `iter` events.  Both
are counted alike: per iteration the slowest worker's time, and from the
last start the latest end less the latest start.  Iteration 0 is left out
(it also opens the connections: gloo's pairs, the executor's)."""

import json
import os
import statistics

from agents.events import read_events
from agents.planning.wan import GOODPUT_SHARE
from testbed import bounds
from testbed.analysis import records
from testbed.analysis.stats import describe, ratio, write_table

SYSTEMS = {"ddp-ring": "DDP, gloo's ring (ranks virginia, frankfurt, tokyo)",
           "ddp-ring-reversed": "DDP, gloo's ring (ranks virginia, tokyo, frankfurt)",
           "ps-star": "PS star (server in virginia)",
           "planner": "planner (trees from the probes' estimates)"}
DIRECTIONS = ("virginia->frankfurt", "frankfurt->virginia", "virginia->tokyo", "tokyo->virginia",
              "frankfurt->tokyo", "tokyo->frankfurt")
COLUMNS = ("system", "model_bytes", "runs", "sync_median_s", "sync_min_s", "sync_max_s", "push_to_pull_median_s",
           "t_lb_s", "median_over_t_lb", *(f"models_per_sync {d}" for d in DIRECTIONS), "failed")


# ------------------------------------------------------------ the records


def ddp_steps(run):
    """[(step, push to pull, from the last start)] from the ranks' metric lines."""
    steps = {}
    for line in read_events(os.path.join(run, "programs", "metrics.jsonl")):
        if "step" in line:
            steps.setdefault(line["step"], []).append((line["start"], line["end"]))
    return [(step, max(end - start for start, end in ranks),
             max(end for _, end in ranks) - max(start for start, _ in ranks))
            for step, ranks in sorted(steps.items())]


def model_bytes_of(summary):
    if summary.get("model_bytes"):
        return summary["model_bytes"]
    return next((m["model_bytes"] for m in (summary.get("metrics") or {}).values()
                 if "model_bytes" in m), None)


def steps_of(run, summary):
    """[(it, push to pull, from the last start, t_lb)] of a DDP run, or
    records.overlay_steps of the star's and the planner's (there t_lb is
    of the links as they were, here as configured: the same, as nothing
    changes them)."""
    if not summary.get("programs"):
        return records.overlay_steps(run, model_bytes_of(summary))
    spec = json.load(open(os.path.join(run, "spec.json")))
    t_lb = bounds.t_lb(bounds.wan_of(spec), model_bytes_of(summary))
    return [(it, push, last, t_lb) for it, push, last in ddp_steps(run)]


# ------------------------------------------------------------ the table


def system_of(label):
    """'ddp-ring-reversed_seed-2' -> 'ddp-ring-reversed'."""
    return label.split("_seed-")[0]


def run_numbers(record):
    """(median from the last start, median push to pull, t_lb, {direction:
    models per sync}, model bytes) of one run's record, iterations after
    the first."""
    summary = record.summary
    rows = record.steady_steps()
    model = model_bytes_of(summary)
    # Every iteration the run made, the first too, moved what the WAN carried.
    iterations = len(rows) + 1
    per_sync = {d: (summary["wan"][d]["bytes"] * GOODPUT_SHARE / iterations / model
                    if d in summary["wan"] else None) for d in DIRECTIONS}
    return (statistics.median(r["from_last_start_s"] for r in rows),
            statistics.median(r["sync_s"] for r in rows),
            statistics.median(r["t_lb_s"] for r in rows), per_sync, model)


def table(runs_dir):
    """One row per system (COLUMNS), from the records in runs_dir alone:
    the median over its runs of each run's median, the runs' min and max."""
    kept, failed = records.load(runs_dir)
    out = []
    for system in SYSTEMS:
        mine = [run_numbers(r) for r in kept if system_of(r.label) == system]
        lost = sum(1 for f in failed if system_of(f["label"]) == system)
        if not mine:
            if lost:
                out.append({"system": system, "runs": 0, "failed": lost})
            continue
        sync = describe([m[0] for m in mine])
        t_lb = statistics.median(m[2] for m in mine)
        row = {"system": system, "model_bytes": mine[0][4], "runs": sync["n"], "sync_median_s": sync["median"],
               "sync_min_s": sync["min"], "sync_max_s": sync["max"],
               "push_to_pull_median_s": statistics.median(m[1] for m in mine),
               "t_lb_s": t_lb, "median_over_t_lb": ratio(sync["median"], t_lb), "failed": lost}
        for d in DIRECTIONS:
            row[f"models_per_sync {d}"] = statistics.median(m[3][d] for m in mine)
        out.append(row)
    return out


# ------------------------------------------------------------ drawing


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs_dir = os.path.join(out_dir, records.RUNS)
    records.keep(rows, runs_dir, steps_of)
    got = table(runs_dir)
    write_table(got, os.path.join(out_dir, "table.csv"), COLUMNS)
    done = [t for t in got if t.get("sync_median_s") is not None]

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4), gridspec_kw={"width_ratios": [1, 1.4]})
    xs = range(len(done))
    med = [t["sync_median_s"] for t in done]
    err = [[m - t["sync_min_s"] for m, t in zip(med, done)], [t["sync_max_s"] - m for m, t in zip(med, done)]]
    left.bar(xs, med, yerr=err, capsize=5, color=["#c44e52", "#dd8452", "#4c72b0", "#55a868"][:len(done)])
    if done:
        left.axhline(done[0]["t_lb_s"], color="k", ls="--", label=f"t_lb = {done[0]['t_lb_s']:.2f} s (any system)")
    for x, t in zip(xs, done):
        left.annotate(f"{t['median_over_t_lb']:.2f}x", (x, t["sync_median_s"]), textcoords="offset points",
                      xytext=(0, 8), ha="center", fontsize=9)
    left.set_xticks(list(xs))
    left.set_xticklabels([t["system"] for t in done], fontsize=8)
    left.set(ylabel="seconds per synchronization", ylim=(0, None),
             title="sync time, median of runs (bars: min-max)")
    left.legend(fontsize=8, loc="upper right")

    width = 0.8 / max(1, len(done))
    for i, t in enumerate(done):
        values = [t[f"models_per_sync {d}"] or 0.0 for d in DIRECTIONS]
        right.bar([j + i * width for j in range(len(DIRECTIONS))], values, width, label=t["system"])
    right.set_xticks([j + 0.4 - width / 2 for j in range(len(DIRECTIONS))])
    right.set_xticklabels([d.replace("->", "\n> ") for d in DIRECTIONS], fontsize=8)
    right.set(ylabel="models carried per sync", title="where each sends its bytes (payload, per WAN direction)")
    right.legend(fontsize=8)
    if done:
        fig.suptitle(f"a {done[0]['model_bytes'] / 1e6:g} MB model among three DCs on the quickstart's WAN",
                     fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, os.path.join(out_dir, "table.csv")]
