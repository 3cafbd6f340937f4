"""What a search run says: stage and coflow completion times from the
scheduler's events, their averages against the lower bound no schedule
beats (testbed/coflow/bounds.py, for the same plan on the same NICs), each
task's makespan, and how closely senders held the rates they were given.

Pacing accuracy: a flow that kept one rate all its life and was not gated
(a worker's push; a PS's pull can go no faster than the pushes it waits
for) should have arrived at that rate: its receiver's goodput (the
least-squares slope of bytes against the arrival time of each chunk)
against the rate.  A flow of fewer than MIN_CHUNKS chunks is not timed.
"""

import statistics

from agents.coflow.model import Fabric
from agents.coflow.search import SearchParams, SearchWorkload
from agents.events import read_events
from testbed.coflow.bounds import search_bounds

MIN_CHUNKS = 10


def scheduler_config(folder, spec):
    dc = spec["search"]["dc"]
    return folder.read_json(f"agents/{dc}-c.json", {}), folder.agent_file(f"{dc}-c", "jsonl")


def lower_bound(settings):
    """The per-port bounds of the plan the scheduler ran, in seconds."""
    search = settings["search"]
    workload = SearchWorkload(SearchParams(**{**search, "compute": tuple(search["compute"])}))
    capacity = [settings["capacity"]] * search["machines"]
    workload.fabric = Fabric(search["machines"], ingress=capacity, egress=capacity)
    return search_bounds(workload)


def pacing(flows, chunk_bytes):
    """[measured / given] of each paced, ungated flow that kept one rate."""
    out = []
    for f in flows:
        if not f["paced"] or f["gated"] or len(set(f["rates"])) != 1 or not f["rates"][0] \
                or f["bytes"] < MIN_CHUNKS * chunk_bytes:
            continue
        if f.get("goodput"):
            out.append(f["goodput"] / f["rates"][0])
    return out


def summarize(folder, spec):
    status = folder.read_json("status.json", {})
    cfg, path = scheduler_config(folder, spec)
    events = read_events(path)
    start = next((e for e in events if e["ev"] == "start"), None)
    done = [e for e in events if e["ev"] == "coflow_done"]
    stages = [e for e in events if e["ev"] == "stage_done"]
    flows = [e for e in events if e["ev"] == "flow"]
    settings = cfg.get("search") or {}
    bound = lower_bound(settings) if settings.get("search") else {}
    makespan = {}
    for e in stages:
        makespan[e["task"]] = makespan.get(e["task"], 0.0) + e["sct"]
    ratios = pacing(flows, spec["search"].get("chunk_bytes", 0))
    last = max((e["t"] for e in events), default=start["t"] if start else 0.0)
    search = {
        "policy": spec["search"]["policy"],
        "coflows": len(done), "stages": len(stages),
        "avg_cct": statistics.fmean(e["cct"] for e in done) if done else None,
        "avg_sct": statistics.fmean(e["sct"] for e in stages) if stages else None,
        "cct": [e["cct"] for e in done],
        "sct": {f"{e['task']}/{e['stage']}": e["sct"] for e in stages},
        "makespan": makespan,
        "lower_bound": bound,
        "pacing_flows": len(ratios),
        "pacing_median": statistics.median(ratios) if ratios else None,
        "pacing_worst": max(ratios, key=lambda r: abs(r - 1)) if ratios else None,
    }
    if search["avg_sct"] and bound.get("avg_sct"):
        search["avg_sct_over_bound"] = search["avg_sct"] / bound["avg_sct"]
    summary = {
        "name": spec.get("name"), "status": status.get("status"), "reason": status.get("reason"),
        "stopped_by": status.get("stopped_by"),
        "wall_time": (last - start["t"]) if start else 0.0,
        "search": search,
        "environment": folder.read_json("env.json", {}),
    }
    folder.write_json("summary.json", summary)
    return summary


PLOTS = ("sct.png",)


def plot(folder, summary):
    """The CDFs of stage and coflow completion times."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary["search"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, values, what in ((axes[0], list(s["sct"].values()), "stage"),
                             (axes[1], s["cct"], "coflow")):
        values = sorted(values)
        if values:
            ax.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post")
        bound = s["lower_bound"].get(f"avg_{what[0]}ct")
        if bound:
            ax.axvline(bound, color="k", linestyle="--", linewidth=1, label="bound on the average")
            ax.legend(fontsize=8)
        ax.set(xlabel=f"{what} completion time (s)", ylabel="fraction", ylim=(0, 1.02),
               title=f"{what}s under {s['policy']}")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = folder.file(PLOTS[0])
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
