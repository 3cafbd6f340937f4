"""Reads a run folder; writes summary.json and PNG plots.  `compare` puts
several runs side by side.  Everything is derived from the files, so a
report can be redrawn any time, and a failed run reports what it got."""

import csv
import os
import statistics

from agents.events import read_events
from testbed import bounds
from testbed.analysis import overlay_plot, programs_report, search_report
from testbed.analysis.figures import links_figure, save
from testbed.analysis.wan import agents_ready, load, probe_quality, run_start, wan_use
from testbed.bounds.cut import sync_lower_bound
from testbed.bounds.timeline import bounds_per_iteration, spent
from testbed.records import cpu
from testbed.records.runfolder import RunFolder


def wan_bounds(folder, spec, model_bytes):
    """(t_lb, t_opt) of one synchronization of `model_bytes` on the WAN as
    configured at the start (testbed/bounds), kept in bounds.json: the
    packing takes seconds on a large WAN and a report is drawn many times.
    (None, None) when fewer than two DCs hold workers or they cannot reach
    each other."""
    cached = folder.read_json("bounds.json", {})
    if cached.get("model_bytes") == model_bytes:
        return cached["t_lb"], cached["t_opt"]
    wan = bounds.wan_of(spec)
    if len(wan.terminals) < 2 or not wan.reachable():
        t_lb = t_opt = None
    else:
        t_lb, t_opt = bounds.t_lb(wan, model_bytes), bounds.t_opt(wan, model_bytes)
    folder.write_json("bounds.json", {"model_bytes": model_bytes, "t_lb": t_lb, "t_opt": t_opt})
    return t_lb, t_opt


def bounds_as_run(folder, spec, changes, iters, model_bytes):
    """For a run whose links changed while it ran (links.jsonl): the
    medians, over the iterations `sync_time` counts, of t_lb on the links
    as they were while each synchronization ran, pushed to pulled
    (testbed/bounds/timeline), and of each synchronization over the bound
    of its links, pushed to pulled and from the last start: (t_lb,
    sync / t_lb, from the last start / t_lb).  The bound of the links as
    configured says little of a run whose links moved.  Kept in
    bounds_as_run.json; (None, None, None) for a run whose links stayed as
    configured."""
    if not changes or not iters or not model_bytes or not spec.get("wan"):
        return None, None, None
    key = {"model_bytes": model_bytes, "iters": len(iters), "changes": len(changes)}
    cached = folder.read_json("bounds_as_run.json", {})
    if cached.get("key") == key:
        return tuple(cached["values"])
    cache, counts = {}, []
    for from_last_start in (False, True):
        rows = bounds_per_iteration(spec, changes, iters, model_bytes, from_last_start, cache)
        steady = [(s, b) for it, s, b in rows if it > 0 and b] or [(s, b) for _, s, b in rows if b]
        counts.append(steady)
    values = (statistics.median(b for _, b in counts[0]) if counts[0] else None,
              *(statistics.median(s / b for s, b in steady) if steady else None for steady in counts))
    folder.write_json("bounds_as_run.json", {"key": key, "values": values})
    return values


def sync_time(iters, from_last_start=False):
    """The median time of one synchronization: per iteration the slowest
    worker's push-to-pull time (under BSP they all wait for it), the first
    iteration left out when there are others (it also opens connections).

    With `from_last_start`, a worker's time counts from when the last
    contributor began (its `wait` left out).  Under BSP a worker that got
    the previous iteration's values early waits for the one that got them
    last, so the slowest push-to-pull counts that iteration's spread of
    finishing times again; a lower bound such as t_lb has every
    contribution ready at once, which this count matches."""
    per_it = {}
    for e in iters:
        per_it[e["it"]] = max(per_it.get(e["it"], 0.0), spent(e, from_last_start))
    steady = [v for it, v in sorted(per_it.items()) if it > 0] or list(per_it.values())
    return statistics.median(steady) if steady else None


def summarize(folder):
    spec = folder.read_json("spec.json", {})
    if spec.get("search"):
        return search_report.summarize(folder, spec)
    if (spec.get("experiment") or {}).get("programs"):
        return programs_report.summarize(folder, spec)
    events, samples, changes = load(folder)
    status = folder.read_json("status.json", {})
    exp = spec.get("experiment") or {}
    t0 = run_start(events)
    iters = [e for evs in events.values() for e in evs if e["ev"] == "iter"]
    evals = sorted((e for evs in events.values() for e in evs if e["ev"] == "eval"),
                   key=lambda e: e["t"])
    per_worker = {}
    for e in iters:
        per_worker[e["agent"]] = per_worker.get(e["agent"], 0) + 1
    # Training ends with the last server or worker event (probes outlive it).
    training = {e["agent"] for evs in events.values() for e in evs
                if e["ev"] == "start" and e.get("role") in ("server", "worker")}
    last = max((e["t"] for evs in events.values() for e in evs if e["agent"] in training), default=t0)

    def mean(key):
        return statistics.fmean(e[key] for e in iters) if iters else None

    breakdown = {k: mean(k) for k in ("compute", "comm", "wait")}
    # A scheme that computes while it synchronizes (NBSync) says how much:
    # that compute is inside the sync time, not after it.
    busy = statistics.fmean(e.get("busy") or 0.0 for e in iters) if iters else 0.0
    iteration_time = (breakdown["compute"] + mean("sync") - busy) if iters else None
    wan = wan_use(spec, events, samples, changes, t0)
    sync = sync_time(iters)
    sync_from_last_start = sync_time(iters, from_last_start=True)
    model_bytes = next((e["params"] * 4 for evs in events.values() for e in evs
                        if e["ev"] == "start" and "params" in e), None)
    bound, cut = sync_lower_bound(spec, model_bytes) if model_bytes and spec.get("wan") else (None, ())
    t_lb, t_opt = wan_bounds(folder, spec, model_bytes) if model_bytes and spec.get("wan") \
        else (None, None)
    t_lb_as_run, over_as_run, last_start_as_run = bounds_as_run(folder, spec, changes, iters, model_bytes)
    target = exp.get("target_accuracy") or 0
    reached = next((e for e in evals if target and e["accuracy"] >= target), None)
    summary = {
        "name": spec.get("name"),
        "status": status.get("status"), "reason": status.get("reason"),
        "stopped_by": status.get("stopped_by"), "target_reached": status.get("target_reached"),
        "sync": exp.get("sync"), "overlay": exp.get("overlay"), "workload": exp.get("workload"),
        "model": exp.get("model"),
        # Workers the run had, whether or not any iteration finished.
        "workers": sum(dc.get("workers", 0) for dc in spec.get("datacenters", [])) or len(per_worker),
        "iterations": min(per_worker.values()) if per_worker else 0,
        "wall_time": (last - t0) if t0 is not None else 0.0,
        "agents_ready": agents_ready(folder, events),
        "iteration_time": iteration_time,
        "iteration_breakdown": breakdown,
        "model_bytes": model_bytes,
        "sync_time": sync,
        "sync_bound": bound or None,
        "sync_bound_pair": list(cut),
        "sync_over_bound": (sync / bound) if sync and bound else None,
        "sync_t_lb": t_lb,
        "sync_t_opt": t_opt,
        "sync_over_t_lb": (sync / t_lb) if sync and t_lb else None,
        "sync_from_last_start": sync_from_last_start,
        "sync_from_last_start_over_t_lb": (sync_from_last_start / t_lb)
        if sync_from_last_start and t_lb else None,
        "sync_t_lb_as_run": t_lb_as_run,
        "sync_over_t_lb_as_run": over_as_run,
        "sync_from_last_start_over_t_lb_as_run": last_start_as_run,
        "final_accuracy": evals[-1]["accuracy"] if evals else None,
        "final_loss": evals[-1]["loss"] if evals else None,
        "target_accuracy": target or None,
        "time_to_target": (reached["t"] - t0) if reached else None,
        "wan": wan,
        "link_changes": len(changes),
        "probe": probe_quality(events, spec, changes),
        "environment": folder.read_json("env.json", {}),
        "cpu": cpu.busiest_machine(read_events(folder.cpu_samples), t0, last),
    }
    folder.write_json("summary.json", summary)
    return summary


PLOTS = ("accuracy.png", "iteration_time.png", "links.png")


def plot(folder):
    """Write the PLOTS; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events, samples, _ = load(folder)
    t0 = run_start(events) or 0.0
    written = []

    evals = sorted((e for evs in events.values() for e in evs if e["ev"] == "eval"),
                   key=lambda e: e["t"])
    iters = [e for evs in events.values() for e in evs if e["ev"] == "iter"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    if evals:
        ax1.plot([e["t"] - t0 for e in evals], [e["accuracy"] for e in evals], marker=".")
    ax1.set(xlabel="wall time (s)", ylabel="test accuracy", title="accuracy")
    losses = [(e["t"] - t0, e["loss"]) for e in iters if e.get("loss") is not None]
    if losses:
        ax2.plot(*zip(*sorted(losses)), ".", markersize=2, alpha=0.5, label="training (workers)")
    if evals:
        ax2.plot([e["t"] - t0 for e in evals], [e["loss"] for e in evals], marker=".", label="test")
    ax2.set(xlabel="wall time (s)", ylabel="loss", title="loss")
    if ax2.lines:
        ax2.legend()
    written.append(save(fig, folder.file(PLOTS[0])))

    by_worker = {}
    for e in iters:
        by_worker.setdefault(e["agent"], []).append(e)
    fig, ax = plt.subplots(figsize=(max(5, len(by_worker) * 0.9), 4))
    names = sorted(by_worker)
    bottom = [0.0] * len(names)
    for part, color in (("compute", "tab:blue"), ("comm", "tab:orange"), ("wait", "tab:gray")):
        vals = [statistics.fmean(e[part] for e in by_worker[n]) for n in names]
        ax.bar(names, vals, bottom=bottom, label=part, color=color)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set(ylabel="seconds per iteration (mean)", title="iteration time breakdown")
    ax.tick_params(axis="x", rotation=45)
    ax.legend()
    written.append(save(fig, folder.file(PLOTS[1])))

    fig = links_figure(samples, events, t0, "the agents started")
    if fig:
        written.append(save(fig, folder.file(PLOTS[2])))
    dc_of = {e["agent"]: e["dc"] for evs in events.values() for e in evs
             if e["ev"] == "start" and e.get("role") in ("server", "worker")}
    written += overlay_plot.draw(folder.file("overlay.png"), events, dc_of)
    return written


def report(path):
    folder = RunFolder(path)
    summary = summarize(folder)
    if "search" in summary:
        return summary, search_report.plot(folder, summary)
    if "programs" in summary:
        return summary, programs_report.plot(folder, summary)
    return summary, plot(folder)


COMPARE_COLUMNS = ("run", "status", "stopped_by", "sync", "overlay", "iterations", "wall_time",
                   "iteration_time", "sync_time", "sync_over_bound", "final_accuracy",
                   "target_accuracy", "time_to_target")


def compare(paths, out_dir):
    """A table (rows of COMPARE_COLUMNS), compare.csv and compare.png in out_dir."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    rows = []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for path in paths:
        folder = RunFolder(path)
        s = summarize(folder)
        name = os.path.basename(os.path.normpath(path))
        rows.append({"run": name, **{k: s.get(k) for k in COMPARE_COLUMNS[1:]}})
        events, _, _ = load(folder)
        t0 = run_start(events) or 0.0
        evals = sorted((e for evs in events.values() for e in evs if e["ev"] == "eval"),
                       key=lambda e: e["t"])
        if evals:
            ax1.plot([e["t"] - t0 for e in evals], [e["accuracy"] for e in evals], marker=".",
                     label=name)
        ax2.bar(name, s["iteration_time"] or 0.0)
    ax1.set(xlabel="wall time (s)", ylabel="test accuracy", title="accuracy over time")
    if ax1.lines:
        ax1.legend(fontsize=8)
    ax2.set(ylabel="seconds", title="mean iteration time")
    ax2.tick_params(axis="x", rotation=30)
    save(fig, os.path.join(out_dir, "compare.png"))
    with open(os.path.join(out_dir, "compare.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COMPARE_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return rows
