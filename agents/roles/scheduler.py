"""Scheduler: the coordinator of a search (a topo.yaml `search:`).  It runs
the successive-halving plan of agents/coflow/search.py in real time (each
job's iteration: its compute time, then its coflow), starts every flow on
its source machine, and re-rates the flows with the coflow policy on
every arrival and departure, on machines' reports of what their flows
have sent, and when a PS's pull may send again (agents/coflow/live.py).
Events:
  coflow       id, task, stage, job, flows, bytes       a coflow arrived
  flow         id, bytes, first, last, goodput, rates, gated   a flow's receiver has it all
  coflow_done  id, task, stage, job, cct
  stage_done   task, stage, sct, jobs
  search_done  coflows, stages, resyncs (estimates the machines' reports corrected)
"""

import heapq
import itertools
import time

from agents.coflow.live import LiveScheduler, flow_id, flow_key
from agents.coflow.model import Fabric
from agents.coflow.policies import make_policy
from agents.coflow.search import SearchParams, SearchWorkload
from agents.roles.compose import endpoint
from agents.transport import RecvTimeout
from agents.watchdog import LoopWatchdog

MAX_WAIT = 0.2


def run(cfg, log):
    settings = cfg.search
    params = SearchParams(**{**settings.search, "compute": tuple(settings.search["compute"])})
    workload = SearchWorkload(params)
    machines = [w.name for w in cfg.workers]
    capacity = [settings.capacity] * len(machines)
    policy = make_policy(settings.policy, **settings.policy_options)
    sched = LiveScheduler(policy, Fabric(len(machines), ingress=capacity, egress=capacity),
                          chunk_bytes=cfg.transport.chunk_bytes)
    ep = endpoint(cfg, log)
    log("start", role="scheduler", dc=cfg.dc, policy=policy.NAME, paced=policy.PACED,
        machines=machines, stages=[[s.task, s.name, len(s.jobs), s.iterations]
                                   for s in workload.stages])
    seq = itertools.count()
    t0 = time.monotonic()
    pending = [(c.arrival, next(seq), c) for c in workload.initial()]
    heapq.heapify(pending)
    history = {}          # flow key -> rates it was given, in order
    coflows = stages = 0
    finished = False
    watchdog = LoopWatchdog("scheduler")
    try:
        while pending or sched.active:
            watchdog.beat()
            now = time.monotonic() - t0
            while pending and pending[0][0] <= now:
                _, _, c = heapq.heappop(pending)
                ps = c.flows[0].dst
                pushed = [i for i, f in enumerate(c.flows) if f.dst == ps]
                changed = sched.arrive(c, now, gates={i: pushed for i, f in enumerate(c.flows)
                                                      if f.src == ps})
                log("coflow", id=c.id, task=c.task, stage=c.stage, job=c.job, flows=len(c.flows),
                    bytes=int(c.size()))
                pushes = [flow_id(c.id, i) for i in pushed]
                for i, f in enumerate(c.flows):
                    key = (c.id, i)
                    history[key] = [sched.rates.get(key, 0.0)]
                    ep.send(machines[f.src], {
                        "type": "send", "flow": flow_id(c.id, i), "dst": machines[f.dst],
                        "bytes": int(f.size), "rate": sched.sent_rate(key),
                        "gate": pushes if f.src == ps else []})
                _tell(ep, sched, machines, changed, history, exclude=c.id)
            wake = sched.tick(now)
            if wake:
                _tell(ep, sched, machines, wake, history)
            until = [pending[0][0] - now] if pending else []
            if sched.wake_at is not None:
                until.append(sched.wake_at - now)
            try:
                m = ep.recv(timeout=max(0.0, min([MAX_WAIT] + until)),
                            watch=[machines[f.src] for c in sched.active.values() for f in c.flows])
            except RecvTimeout:
                continue
            kind = m.header.get("type")
            if kind not in ("arrived", "progress"):
                raise RuntimeError(f"{m.sender} sent a {kind} message to the scheduler")
            now = time.monotonic() - t0
            if kind == "progress":
                changed = sched.progress({flow_key(fid): n for fid, n in m.header["sent"]}, now)
                _tell(ep, sched, machines, changed, history)
                continue
            cid, i = flow_key(m.header["flow"])
            coflow = sched.active[cid]
            done, changed = sched.flow_finished(cid, i, now)
            f = coflow.flows[i]
            log("flow", id=m.header["flow"], bytes=m.header["bytes"], first=m.header["first"],
                last=m.header["last"], goodput=m.header["rate"], rates=history.pop((cid, i)),
                paced=policy.PACED,
                gated=f.src == coflow.flows[0].dst, src=machines[f.src], dst=machines[f.dst])
            _tell(ep, sched, machines, changed, history)
            if done is None:
                continue
            coflows += 1
            log("coflow_done", id=cid, task=done.task, stage=done.stage, job=done.job,
                cct=now - sched.arrived_at.pop(cid))
            stage = workload.stage_of(done)
            for c in workload.on_done(done, now):
                heapq.heappush(pending, (c.arrival, next(seq), c))
            if workload.stage_finished(stage.key):
                stages += 1
                log("stage_done", task=stage.task, stage=stage.name, jobs=len(stage.jobs),
                    sct=now - workload.stage_start(stage.key))
        log("search_done", coflows=coflows, stages=stages, resyncs=sched.resyncs)
        for name in machines:
            ep.send(name, {"type": "end"})
        finished = True
    finally:
        watchdog.stop()
        ep.close(drain=finished)


def _tell(ep, sched, machines, changed, history, exclude=None):
    """Send each source machine the new rates of its flows."""
    by_source = {}
    for (cid, i), rate in changed.items():
        if cid == exclude or (cid, i) not in sched.remaining:
            continue
        history.setdefault((cid, i), []).append(rate)
        if sched.policy.PACED:
            src = machines[sched.active[cid].flows[i].src]
            by_source.setdefault(src, []).append([flow_id(cid, i), rate])
    for src, rates in by_source.items():
        ep.send(src, {"type": "rates", "rates": rates})
