"""An event-driven fluid simulator of coflows on the big-switch model.

It drives the same policy objects a live scheduler would (see
policies/base.py): at every event (an arrival, a flow finishing, a time
the policy asked to be woken at) it asks the policy for rates, then advances time to the next flow finish or
arrival.  A `source` releases coflows: a static trace releases them all at
their arrival times; a search workload releases a job's next coflow a
compute time after its previous one finishes, and a stage's successors
when the stage ends.

A source offers initial() -> coflows, on_done(coflow, now) -> coflows
released by that completion (arrival >= now), and stage_start(key) -> the
time a stage began, or None (then a stage begins at its first arrival).

Metrics: CCT = finish - arrival per coflow; SCT = last finish of a
stage's coflows - the stage's start; makespan per task = last finish -
the task's first stage start.  `order` lists coflow ids in the priority
the policy gave them when first ranked (for policies without an order,
the order of completion).
"""

import heapq
from dataclasses import dataclass, field

# A flow with at most this share of its size left is finished (float dust).
FINISH_TOLERANCE = 1e-9


@dataclass
class Result:
    cct: dict
    finish: dict
    order: list
    sct: dict = field(default_factory=dict)
    makespan: dict = field(default_factory=dict)
    events: int = 0

    @property
    def avg_cct(self):
        return sum(self.cct.values()) / len(self.cct) if self.cct else 0.0

    @property
    def avg_sct(self):
        return sum(self.sct.values()) / len(self.sct) if self.sct else None


class StaticSource:
    """Coflows with fixed arrival times (a trace)."""

    def __init__(self, coflows):
        self.coflows = list(coflows)

    def initial(self):
        return self.coflows

    def on_done(self, coflow, now):
        return []

    def stage_start(self, key):
        return None


class Stall(RuntimeError):
    """The policy gave no flow a rate while coflows were waiting: a policy bug."""


def simulate(policy, fabric, source):
    pending, seq = [], 0

    def release(coflows):
        nonlocal seq
        for c in coflows:
            heapq.heappush(pending, (c.arrival, seq, c))
            seq += 1

    release(source.initial())
    active, remaining, sizes = {}, {}, {}
    seen, finish, ranked, ranked_set = {}, {}, [], set()
    now, events = 0.0, 0
    while pending or active:
        if not active:
            now = max(now, pending[0][0])
        arrived = False
        while pending and pending[0][0] <= now:
            c = heapq.heappop(pending)[2]
            if c.id in seen:
                raise ValueError(f"coflow id {c.id} is released twice")
            seen[c.id] = c
            active[c.id] = c
            for i, f in enumerate(c.flows):
                remaining[(c.id, i)] = sizes[(c.id, i)] = f.size
            policy.on_arrival(c, now)
            arrived = True
        if arrived:
            order = policy.order(now, active, remaining, fabric)
            for cid in order or ():
                if cid not in ranked_set:
                    ranked_set.add(cid)
                    ranked.append(cid)
        rates = policy.rates(now, active, remaining, fabric)
        events += 1
        dt = pending[0][0] - now if pending else float("inf")
        wake = policy.wake_up(now, active, remaining, rates)
        if wake is not None:
            dt = min(dt, wake)
        for k, r in rates.items():
            if r > 0:
                dt = min(dt, float(remaining[k] / r))
        if dt == float("inf"):
            raise Stall(f"policy {policy.NAME} gave no flow a rate at time {now:g} "
                        f"with {len(active)} coflows waiting")
        now = float(now + dt)
        done_flows = []
        for k, r in rates.items():
            left = remaining[k] - r * dt
            if left <= FINISH_TOLERANCE * sizes[k]:
                done_flows.append(k)
            else:
                remaining[k] = left
        touched = set()
        for k in done_flows:
            del remaining[k]
            touched.add(k[0])
        for cid in [c for c in active if c in touched]:
            c = active[cid]
            if any((cid, i) in remaining for i in range(len(c.flows))):
                continue
            del active[cid]
            finish[cid] = now
            policy.on_departure(c, now)
            release(source.on_done(c, now))
    result = Result(cct={cid: finish[cid] - c.arrival for cid, c in seen.items()},
                    finish=finish, events=events,
                    order=ranked + sorted((c for c in finish if c not in ranked_set),
                                          key=lambda c: finish[c]))
    result.sct, result.makespan = stage_metrics(seen, finish, source)
    return result


def stage_metrics(coflows, finish, source):
    """SCT per stage key and makespan per task, from coflows that name a stage."""
    stages = {}
    for cid, c in coflows.items():
        if c.stage_key is not None:
            stages.setdefault(c.stage_key, []).append(c)
    sct, task_start, task_end = {}, {}, {}
    for key, members in stages.items():
        start = source.stage_start(key)
        if start is None:
            start = min(c.arrival if c.release is None else c.release for c in members)
        end = max(finish[c.id] for c in members)
        sct[key] = end - start
        task = key[0]
        task_start[task] = min(task_start.get(task, start), start)
        task_end[task] = max(task_end.get(task, end), end)
    return sct, {t: task_end[t] - task_start[t] for t in task_start}
