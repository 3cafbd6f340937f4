"""The state a page shows, as JSON-ready data: the DCs and each WAN
direction (configured, measured, probed), the overlay's current plan and
the training's progress.  One function, `state`, serves both pages: the
live page passes the network's links as configured now, the replay asks
for the state at each second of a finished run.

All times are CLOCK_MONOTONIC seconds, like the agents' events and the
link samples; records that carry only a wall time (link changes, speed
changes) are moved onto that clock with the run's wall - monotonic offset.
"""

import bisect
import os

from agents.events import EventTail
from testbed.analysis import report, wan
from testbed.analysis.overlay_plot import piece_edges, round_edges
from testbed.bounds.cut import sync_lower_bound
from testbed.records.runfolder import RunFolder
from testbed.ui.layout import positions

MAX_FRAMES = 300
PLAN_DECISIONS = ("release", "replan")


class RunReader:
    """A run folder's events, read incrementally: `refresh` takes what was
    appended since the last call, so a live page costs little per second."""

    def __init__(self, run_dir):
        self.folder = RunFolder(run_dir)
        self.spec = self.folder.read_json("spec.json", {})
        self.events = {}        # agent -> [event]
        self.samples = []
        self.changes = []
        self.speeds = []
        self.runner = []
        self._tails = {}
        self._bound = None
        self._timeline = None   # (times, events) of every agent, by time

    def _take(self, path):
        tail = self._tails.setdefault(path, EventTail(path))
        return tail.read()

    def refresh(self):
        agents = self.folder.agents
        for name in sorted(os.listdir(agents)) if os.path.isdir(agents) else []:
            if name.endswith(".jsonl"):
                new = self._take(os.path.join(agents, name))
                self.events.setdefault(name[:-6], []).extend(new)
        self.samples += self._take(self.folder.link_samples)
        self.changes += self._take(self.folder.links)
        self.speeds += self._take(self.folder.file("speeds.jsonl"))
        self.runner += self._take(self.folder.file("runner.jsonl"))
        self._timeline = None
        return self

    def until(self, t):
        """Every agent's events up to time t (all for None), oldest first."""
        if self._timeline is None:
            merged = sorted((e for evs in self.events.values() for e in evs), key=lambda e: e["t"])
            self._timeline = ([e["t"] for e in merged], merged)
        times, merged = self._timeline
        return merged if t is None else merged[:bisect.bisect_right(times, t)]

    def samples_until(self, t):
        """The link samples up to time t; the sampler writes them in time order."""
        if t is None:
            return self.samples
        return self.samples[:bisect.bisect_right([s["t"] for s in self.samples], t)]

    def offset(self):
        """wall - monotonic seconds, or 0 when nothing recorded both."""
        found = wan.clock_offset({**self.events, "runner": self.runner})
        return 0.0 if found is None else found

    def started(self):
        """When the network came up (else the first sample), monotonic."""
        up = next((e["t"] for e in self.runner if e["ev"] == "network_up"), None)
        if up is None and self.samples:
            up = self.samples[0]["t"]
        return up

    def last_time(self):
        times = [s["t"] for s in self.samples[-1:]]
        times += [evs[-1]["t"] for evs in self.events.values() if evs]
        return max(times) if times else None

    def bound(self, model_bytes):
        """The WAN's sync lower bound for the model, computed once."""
        if self._bound is None and model_bytes and self.spec.get("wan"):
            self._bound = sync_lower_bound(self.spec, model_bytes)[0] or None
        return self._bound


def read(run_dir):
    return RunReader(run_dir).refresh()


def directions(spec):
    """[(src, dst, configured at the start)] in the topology's order."""
    out = []
    for w in spec.get("wan", []):
        out += [(w["a"], w["b"], w["ab"]), (w["b"], w["a"], w["ba"])]
    return out


def configured(d):
    """A direction's settings as plain numbers (a spec Direction or its JSON)."""
    get = (lambda k, default=None: d.get(k, default)) if isinstance(d, dict) else \
        (lambda k, default=None: getattr(d, k, default))
    return {"rate": get("rate"), "delay": get("delay", 0.0), "jitter": get("jitter", 0.0),
            "loss": get("loss", 0.0), "up": get("up", True)}


def configured_at(reader, t):
    """{(src, dst): settings} as the link changes up to time t left them."""
    now = {(a, b): configured(d) for a, b, d in directions(reader.spec)}
    offset = reader.offset()
    for c in reader.changes:
        if t is None or c["wall"] - offset <= t:
            now[(c["src"], c["dst"])] = configured(c)
    return now


def throughput(samples, src, dst):
    """Bit/s the direction sent between its last two samples."""
    own = []
    for s in reversed(samples):
        if (s["src"], s["dst"]) == (src, dst):
            own.append(s)
            if len(own) == 2:
                break
    if len(own) < 2 or own[0]["t"] <= own[1]["t"]:
        return None
    b, a = own
    return (b["bytes"] - a["bytes"]) * 8 / (b["t"] - a["t"])


def utilisation(measured, settings):
    """Measured throughput over the configured rate; None when unknown or down."""
    if measured is None or not settings["up"] or not settings["rate"]:
        return None
    return measured / settings["rate"]


def links_state(reader, t, current, events):
    # Oldest first, so the newest estimate of each direction stays.
    estimates = {(e["src"], e["dst"]): e for e in events if e["ev"] == "estimate"}
    settings = {k: configured(d) for k, d in current.items()} if current is not None \
        else configured_at(reader, t)
    samples = reader.samples_until(t)
    out = []
    for src, dst, _ in directions(reader.spec):
        now = settings[(src, dst)]
        measured = throughput(samples, src, dst)
        est = estimates.get((src, dst))
        out.append({"src": src, "dst": dst, **now, "throughput": measured,
                    "utilisation": utilisation(measured, now),
                    "estimate": est["bw"] if est else None})
    return out


def plan_state(events, start):
    """The overlay's plan in force: per root its trees, when it last
    changed (seconds since `start`) and why."""
    plans = [e for e in events if e["ev"] == "plan"]
    decisions = [e for e in events if e["ev"] == "decision"]
    # The coordinator's start names the overlay even before any plan exists.
    named = [e for e in events if e["ev"] == "start" and e.get("overlay")]
    out = {"overlay": next((e["overlay"] for e in plans + named), None), "trees": [], "routes": [],
           "changed_at": None, "why": "no plan yet"}
    shifts = [d for d in decisions if d.get("decision") in PLAN_DECISIONS]
    rounds = [d for d in decisions if d.get("decision") in ("pair", "distribute")]
    if shifts:
        last = max(shifts, key=lambda d: d["t"])
        # The planner's decisions carry its trees; NetStorm's only each root's share.
        out["trees"] = last.get("trees") or [
            {"root": dc, "share": share, "aggregation": [], "distribution": []}
            for dc, share in sorted(last.get("roots", {}).items())]
        out["routes"] = last.get("routes", [])
        out["changed_at"] = last["t"] - start
        out["why"] = (f"version {last['version']} re-planned: link speeds moved by "
                      f"{last['change'] * 100:.0f}%" if last["decision"] == "replan" else
                      f"version {last['version']} released at iteration {last['it']}")
    elif rounds:
        it = max(d["it"] for d in rounds)
        here = [d for d in rounds if d["it"] == it]
        for piece in sorted({d.get("piece", 0) for d in here}):
            agg, dist = round_edges([d for d in here if d.get("piece", 0) == piece], it)
            out["trees"].append({"root": f"piece {piece}", "share": None,
                                 "aggregation": agg, "distribution": dist})
        out["changed_at"] = min(d["t"] for d in here) - start
        out["why"] = f"decisions of round {it}"
    elif plans:
        last = max(plans, key=lambda e: e["t"])
        by_root = {}
        for piece in last["plan"]["pieces"]:
            agg, dist = piece_edges(piece)
            tree = by_root.setdefault(piece["root"], {"root": piece["root"], "pieces": 0,
                                                      "aggregation": [], "distribution": []})
            tree["pieces"] += 1
            tree["aggregation"] += [e for e in agg if e not in tree["aggregation"]]
            tree["distribution"] += [e for e in dist if e not in tree["distribution"]]
        size = sum(p["stop"] - p["start"] for p in last["plan"]["pieces"]) or 1
        for root, tree in by_root.items():
            tree["share"] = sum(p["stop"] - p["start"] for p in last["plan"]["pieces"]
                                if p["root"] == root) / size
        out["trees"] = list(by_root.values())
        out["changed_at"] = min(e["t"] for e in plans) - start
        out["why"] = f"the static plan of {last['overlay']}"
    return out


def progress_state(reader, events, start):
    workers = {e["agent"] for e in events if e["ev"] == "start" and e.get("role") == "worker"}
    iters = [e for e in events if e["ev"] == "iter" and e["agent"] in workers]
    evals = sorted((e for e in events if e["ev"] == "eval"), key=lambda e: e["t"])
    exp = reader.spec.get("experiment") or {}
    model_bytes = next((e["params"] * 4 for e in events if e["ev"] == "start" and "params" in e),
                       None)
    bounds = reader.folder.read_json("bounds.json", {})
    return {"iteration": max((e["it"] + 1 for e in iters), default=0),
            "max_iterations": exp.get("max_iterations"),
            "accuracy": evals[-1]["accuracy"] if evals else None,
            "target_accuracy": exp.get("target_accuracy"),
            "sync": report.sync_time(iters),
            "sync_bound": reader.bound(model_bytes),
            "sync_t_lb": bounds.get("t_lb") if bounds.get("model_bytes") == model_bytes else None,
            "history": [[round(e["t"] - start, 3), e["accuracy"]] for e in evals]}


def speeds_state(reader, t):
    speeds = {}
    for dc in reader.spec.get("datacenters", []):
        compute = list(dc.get("compute") or [])
        for i in range(dc.get("workers", 0)):
            speeds[f"{dc['name']}-w{i}"] = compute[i] if i < len(compute) else 1.0
    offset = reader.offset()
    for s in reader.speeds:
        if t is None or s["wall"] - offset <= t:
            for w in s["workers"]:
                speeds[w] = s["speed"]
    return speeds


def dcs_state(spec):
    dcs = spec.get("datacenters", [])
    where = positions([d["name"] for d in dcs])
    return [{"name": d["name"], "x": where[d["name"]][0], "y": where[d["name"]][1],
             "servers": d.get("servers", 0), "workers": d.get("workers", 0)} for d in dcs]


def state(reader, t=None, current=None, now=None):
    """The page's data at time t (None: everything recorded so far).
    current: {(src, dst): Direction} as the live network holds it, instead
    of replaying the link changes; now: the clock's time for the elapsed
    seconds of a live run."""
    start = reader.started() or 0.0
    events = reader.until(t)
    end = t if t is not None else (now if now is not None else reader.last_time() or start)
    status = reader.folder.read_json("status.json", {})
    return {"name": reader.spec.get("name"), "status": status.get("status"),
            "elapsed": max(0.0, end - start),
            "dcs": dcs_state(reader.spec), "links": links_state(reader, t, current, events),
            "plan": plan_state(events, start), "progress": progress_state(reader, events, start),
            "speeds": speeds_state(reader, t)}


def frame_times(reader, most=MAX_FRAMES):
    """The times a replay shows: one a second from the network's start to
    the last record, thinned to at most `most`, the last always included."""
    start, end = reader.started(), reader.last_time()
    if start is None or end is None or end <= start:
        return [end] if end is not None else []
    step = max(1.0, (end - start) / (most - 1))
    times, t = [], start
    while t < end:
        times.append(t)
        t += step
    return times + [end]


def replay(run_dir):
    """{"frames": [state]} of a finished run, oldest first; the accuracy
    history is kept once, in the last frame."""
    reader = read(run_dir)
    frames = [state(reader, t) for t in frame_times(reader)] or [state(reader)]
    for f in frames[:-1]:
        f["progress"]["history"] = []
    return {"frames": frames}
