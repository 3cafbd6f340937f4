"""What a run folder says about its agents and its WAN: the events by
agent, when training began, each direction's throughput from the kernel's
counters, the configured rates over time, and how well the probes read
them.  Shared by the reports of every kind of run."""

import statistics

from agents.events import read_events


def load(folder):
    """(events by agent, link samples, link changes) of a run."""
    events = {name: read_events(folder.agent_file(name, "jsonl")) for name in folder.agent_names()}
    return events, read_events(folder.link_samples), read_events(folder.links)


def agents_ready(folder, events):
    """Seconds from the run's start (before the network is built, since the
    agents' launcher starts first; from the network being up in runs
    recorded before that) to the last worker's `start` (it logs it right
    before its first gradient, so no iteration ends before): how long the
    agents took to begin."""
    runner = read_events(folder.file("runner.jsonl"))
    up = next((e["t"] for kind in ("starting", "network_up") for e in runner if e["ev"] == kind), None)
    starts = [e["t"] for evs in events.values() for e in evs
              if e["ev"] == "start" and e.get("role") == "worker"]
    return max(starts) - up if up is not None and starts else None


def run_start(events):
    """When training began: the first server or worker ready (probes start
    earlier, as they load no model)."""
    starts = [e["t"] for evs in events.values() for e in evs
              if e["ev"] == "start" and e.get("role") in ("server", "worker")]
    return min(starts) if starts else None


def link_series(samples):
    """{(src, dst): [(t, configured bit/s, measured bit/s)]} from byte counters."""
    by_dir = {}
    for s in samples:
        by_dir.setdefault((s["src"], s["dst"]), []).append(s)
    series = {}
    for key, rows in by_dir.items():
        rows.sort(key=lambda r: r["t"])
        series[key] = [(b["t"], b["rate"], (b["bytes"] - a["bytes"]) * 8 / (b["t"] - a["t"]))
                       for a, b in zip(rows, rows[1:]) if b["t"] > a["t"]]
    return series


def probe_estimates(events):
    """{(src, dst): [estimate events]} from the probes' event files."""
    out = {}
    for evs in events.values():
        for e in evs:
            if e["ev"] == "estimate":
                out.setdefault((e["src"], e["dst"]), []).append(e)
    return out


def configured_rates(spec, changes):
    """{(src, dst): [(wall time, rate)]}: each direction's rate over time."""
    rates = {}
    for link in spec.get("wan", []):
        rates[(link["a"], link["b"])] = [(0.0, link["ab"]["rate"])]
        rates[(link["b"], link["a"])] = [(0.0, link["ba"]["rate"])]
    for c in changes:
        rates.setdefault((c["src"], c["dst"]), []).append((c["wall"], c["rate"]))
    return rates


def clock_offset(events):
    """wall - monotonic time, from the agents' events; None without any."""
    diffs = sorted(e["wall"] - e["t"] for evs in events.values() for e in evs if "wall" in e)
    return diffs[len(diffs) // 2] if diffs else None


def time_weighted_mean(history, start, end):
    """Mean over [start, end] of a step function [(from time, value)], sorted
    by time; the first value also holds before its time."""
    if end <= start:
        return rate_at(history, start)
    total = 0.0
    for i, (t, value) in enumerate(history):
        lo = start if i == 0 else max(start, t)
        hi = min(end, history[i + 1][0]) if i + 1 < len(history) else end
        if hi > lo:
            total += value * (hi - lo)
    return total / (end - start)


def link_use(own, t0, configured=None):
    """(mean throughput, mean configured rate) of one direction over the same
    seconds: the sample intervals that end after t0 (while the agents
    ran).  own: its samples, sorted by time; configured: its rate history
    [(monotonic time, bit/s)], else the rates the samples report."""
    pairs = [(a, b) for a, b in zip(own, own[1:]) if b["t"] > a["t"] and (t0 is None or b["t"] >= t0)]
    if not pairs:
        return 0.0, None
    start, end = pairs[0][0]["t"], pairs[-1][1]["t"]
    moved = pairs[-1][1]["bytes"] - pairs[0][0]["bytes"]
    history = configured or [(s["t"], s["rate"]) for s in own]
    return moved * 8 / (end - start), time_weighted_mean(history, start, end)


def rate_at(history, wall):
    rate = history[0][1]
    for t, r in history:
        if t <= wall:
            rate = r
    return rate


PROBE_TOLERANCE = 0.15


def probe_quality(events, spec, changes):
    """Per direction: the probe's median error against the configured rate,
    how long it took to follow each change, and its traffic as a share of
    the link (over the time it probed)."""
    rates = configured_rates(spec, changes)
    trains = {}
    for evs in events.values():
        for e in evs:
            if e["ev"] == "train":
                trains.setdefault((e["agent"][:-2], e["dst"]), []).append(e)
    out = {}
    for key, ests in probe_estimates(events).items():
        history = rates.get(key)
        if not history:
            continue
        errors = [e["bw"] / rate_at(history, e["wall"]) - 1 for e in ests]
        follow = []
        for t_change, rate in history[1:]:
            later = [e for e in ests if e["wall"] > t_change]
            hit = next((e for e in later if abs(e["bw"] / rate - 1) <= PROBE_TOLERANCE), None)
            follow.append(hit["wall"] - t_change if hit else None)
        sent = trains.get(key, [])
        span = (sent[-1]["t"] - sent[0]["t"]) if len(sent) > 1 else 0.0
        mean_rate = statistics.fmean(rate_at(history, e["wall"]) for e in sent) if sent else 0.0
        out[f"{key[0]}->{key[1]}"] = {
            "estimates": len(ests),
            "median_abs_error": statistics.median(abs(x) for x in errors),
            "last_estimate": ests[-1]["bw"],
            "follow_seconds": follow,
            "overhead": (sum(e["bytes"] for e in sent[:-1]) * 8 / (mean_rate * span)) if span else None,
        }
    return out


def wan_use(spec, events, samples, changes, t0):
    """Per WAN direction, from `t0` on: bytes it carried, its mean and peak
    throughput, and its configured rate (the last, and the mean over the
    same seconds as the throughput)."""
    wan = {}
    offset = clock_offset(events)
    rate_history = configured_rates(spec, changes)
    for (src, dst), rows in link_series(samples).items():
        rows = [r for r in rows if t0 is None or r[0] >= t0]  # while the agents ran
        own = sorted((s for s in samples if (s["src"], s["dst"]) == (src, dst)), key=lambda s: s["t"])
        history = rate_history.get((src, dst)) if offset is not None else None
        # The configured rate averaged over the seconds the throughput is, not
        # the last one set: a link at 50 Mbit/s for half the run and 5 for the
        # other half is compared with 27.5.
        mean_throughput, configured_mean = link_use(
            own, t0, [(w - offset, r) for w, r in history] if history else None)
        wan[f"{src}->{dst}"] = {
            "bytes": own[-1]["bytes"] - own[0]["bytes"] if own else 0,
            "configured_rate_final": own[-1]["rate"] if own else None,
            "configured_rate_mean": configured_mean,
            "mean_throughput": mean_throughput,
            "peak_throughput": max((r[2] for r in rows), default=0.0)}
    return wan
