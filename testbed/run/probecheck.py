"""How close the probes' estimates come to the configured rates, on a
network that is already built.

Only the probes run (one per DC, on its router, with the settings a run
gives them), for as long as it takes every direction to record a few
estimates; each estimate is divided by the configured rate of the slowest
link direction on its path (the probes measure the wire rate, so no
goodput share applies).  It also counts the trains that crossed another
on a link direction: with the probes' agreed slots there should be none.
"""

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from agents.config import AgentConfig, Peer, ProbeSection
from agents.events import read_events
from agents.probe import schedule
from testbed.run.runner import PROBE_LEAD, PROBE_PORT, Agent, probe_settings, stop_agents
from testbed.spec.experiment import ProbeSettings


@dataclass
class ProbeCheck:
    ratios: dict            # (src, dst) -> [estimate / configured rate, in order recorded]
    pairs: int              # ordered DC pairs probed
    slots: int              # slots per period
    widths: tuple           # each slot's length, seconds
    period: float           # the effective period, seconds
    crossings: list         # [(link direction, pair, pair)]: trains on a link at once
    late: int               # trains a probe skipped because it woke after their slot began
    folder: str             # the probes' configs, logs and events

    def settled(self):
        """(src, dst) -> the ratio of its last estimate (smoothed by then)."""
        return {k: v[-1] for k, v in self.ratios.items() if v}

    def worst(self, directions=None):
        """The largest |ratio - 1| over `directions` (all by default); inf
        when one of them recorded nothing."""
        keys = self.ratios if directions is None else directions
        return max((max((abs(r - 1) for r in self.ratios.get(k, [])), default=float("inf"))
                    for k in keys), default=0.0)


def neighbours(spec):
    """Both directions of every WAN link, as (src, dst)."""
    return [d for link in spec.wan for d in ((link.a, link.b), (link.b, link.a))]


def probe_ratios(net, settings=ProbeSettings(), samples=3, timeout=None, folder=None):
    """Run the probes on `net` (an EmulatedNetwork) until every ordered DC
    pair has recorded `samples` estimates, or `timeout` seconds (by default
    long enough for the slowest pair to do so twice over).  Returns a
    ProbeCheck; the probes are stopped before it returns."""
    spec = net.spec
    folder = folder or tempfile.mkdtemp(prefix="probecheck-")
    os.makedirs(folder, exist_ok=True)
    shared = probe_settings(spec, [], probe=settings)
    pairs = [schedule.Pair(q["src"], q["dst"], tuple(map(tuple, q["links"])), q["delay"], q["rate"])
             for q in shared["pairs"]]
    table = schedule.table(pairs, settings.period, settings.train_time)
    if timeout is None:
        # A steady direction is read on the smaller budget, so the least often.
        every = max(schedule.train_plan(q, pairs, q.rate, table.period, settings.budget_when_steady,
                                        settings.train_time)[1] for q in pairs)
        timeout = PROBE_LEAD + 2 * (samples + 2) * every * table.period
    peers = [Peer(f"{dc.name}-p", net.plan.router(dc.name).ip, PROBE_PORT, dc.name)
             for dc in spec.datacenters]
    agents = []
    try:
        for rank, p in enumerate(peers):
            agents.append(_start(net, folder, AgentConfig(
                name=p.name, role="probe", dc=p.dc, host=p.host, port=p.port,
                events=os.path.join(folder, f"{p.name}.jsonl"), rank=rank, probes=peers,
                probe=ProbeSection(**shared))))
        deadline = time.monotonic() + timeout
        while True:
            ratios = _ratios(_events(folder, spec), pairs)
            done = all(len(ratios.get((q.src, q.dst), [])) >= samples for q in pairs)
            if done or time.monotonic() > deadline:
                break
            for a in agents:
                if a.proc.poll() is not None:
                    raise RuntimeError(f"probe {a.name} exited with code {a.proc.returncode}; "
                                       f"see {a.log_path}")
            time.sleep(0.5)
    finally:
        stop_agents(agents)
    events = _events(folder, spec)
    return ProbeCheck(ratios=_ratios(events, pairs), pairs=len(pairs), slots=table.slots,
                      widths=table.widths, period=table.period,
                      crossings=crossings(events, spec, pairs),
                      late=sum(e["ev"] == "late" for e in events), folder=folder)


def crossings(events, spec, pairs, slack=0.005):
    """[(link direction, (src, dst), (src, dst))] for trains that were on
    the same link direction at once, from the probes' `train` events: a
    train reaches each link of its path after the delay of the links
    before it, and holds it for its size at the link's configured rate.
    `slack` forgives the time a probe takes to hand a train to the kernel."""
    path = {(q.src, q.dst): q.links for q in pairs}
    busy = {}
    for e in events:
        if e["ev"] != "train":
            continue
        key = (e["agent"][:-len("-p")], e["dst"])
        at = e["sent"]
        for a, b in path[key]:
            way = spec.link(a, b).direction(a, b)
            busy.setdefault((a, b), []).append((at, at + e["bytes"] * 8 / way.rate, key))
            at += way.delay + way.jitter
    out = []
    for link, spans in busy.items():
        spans.sort()
        for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
            if start < end - slack:
                out.append((link, first, second))
    return out


def _start(net, folder, cfg):
    path = os.path.join(folder, f"{cfg.name}.json")
    cfg.save(path)
    log_path = os.path.join(folder, f"{cfg.name}.log")
    with open(log_path, "wb") as log:
        proc = net.node(f"{cfg.dc}-r").popen(
            [sys.executable, "-m", "agents", "probe", "--config", path],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    net.state.note("pids", proc.pid)
    return Agent(cfg.name, "probe", proc, log_path)


def _events(folder, spec):
    return [e for dc in spec.datacenters
            for e in read_events(os.path.join(folder, f"{dc.name}-p.jsonl"))]


def _ratios(events, pairs):
    configured = {(q.src, q.dst): q.rate for q in pairs}
    out = {}
    for e in sorted((e for e in events if e["ev"] == "estimate"), key=lambda e: e["t"]):
        key = (e["src"], e["dst"])
        out.setdefault(key, []).append(e["bw"] / configured[key])
    return out
