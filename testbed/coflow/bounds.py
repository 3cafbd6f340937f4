"""Lower bounds on the average CCT and SCT that no schedule beats.

The per-port bound.  Take items i (coflows, stages or whole searches),
each released at a fixed time r_i, with work d_ip at port p (capacity
c_p) that must be done between r_i and its completion C_i, and a bound
L_i on C_i - r_i that holds alone (its bottleneck time, for a coflow).
Fix one port p.  Whatever the schedule, the items' work at p is served by
one server of rate c_p, preemptively, each item no earlier than r_i, and
item i is not complete before its work at p is; so the sum of C_i over
items with work at p is at least the least sum of completion times of the
single-machine problem 1 | r_i, pmtn | sum C_i with processing times
d_ip / c_p, which shortest-remaining-processing-time (SRPT) attains
(Schrage 1968).  Items without work at p are still bounded by their L_i.
So for every p

    sum_i (C_i - r_i) >= sum_{i at p} (SRPT_i - r_i) + sum_{i not at p} L_i,

and the bound is the largest of these and of sum_i L_i.

Uses.
* Coflows of a trace: r = arrival, d = demand, L = bottleneck time.
* Stages of a trace: r = the stage's first arrival, d = the sum of its
  coflows' demands, L = the latest (arrival - r + bottleneck time).
* A search workload (search.py), whose arrivals depend on the schedule:
  its stages run one after another, so a task's SCTs add up to its
  makespan and sum of SCT = sum over tasks of makespan.  Each task is an
  item with r = its start, d = all its coflows' demand, L = the sum over
  its stages of the slowest job's iterations x (compute + bottleneck
  time).  Its CCT bound is each coflow's bottleneck time, the only one
  that does not depend on when coflows arrive.
"""

import heapq

import numpy as np


def srpt_completions(releases, work):
    """Completion times of SRPT on one unit-rate machine."""
    n = len(work)
    jobs = sorted(range(n), key=lambda i: releases[i])
    done = [0.0] * n
    heap, t, k = [], 0.0, 0
    while k < n or heap:
        if not heap:
            t = max(t, releases[jobs[k]])
        while k < n and releases[jobs[k]] <= t:
            heapq.heappush(heap, (work[jobs[k]], jobs[k]))
            k += 1
        left, i = heapq.heappop(heap)
        next_release = releases[jobs[k]] if k < n else float("inf")
        if t + left <= next_release:
            t += left
            done[i] = t
        else:
            heapq.heappush(heap, (left - (next_release - t), i))
            t = next_release
    return done


def port_bound(releases, demands, alone, capacity):
    """Lower bound on sum_i (C_i - r_i); demands is (items, ports)."""
    releases = np.asarray(releases, dtype=float)
    demands = np.asarray(demands, dtype=float)
    alone = np.asarray(alone, dtype=float)
    best = float(alone.sum())
    for p in range(demands.shape[1]):
        at = demands[:, p] > 0
        if not at.any():
            continue
        done = srpt_completions(list(releases[at]), list(demands[at, p] / capacity[p]))
        best = max(best, float(np.sum(np.array(done) - releases[at]) + alone[~at].sum()))
    return best


def trace_bounds(coflows, fabric):
    """{"avg_cct": ..., "avg_sct": ... (None without stages)} for fixed arrivals."""
    if not coflows:
        return {"avg_cct": 0.0, "avg_sct": None}
    demand = {c.id: fabric.demand(c.flows) for c in coflows}
    alone = {c.id: float(np.max(demand[c.id] / fabric.capacity)) for c in coflows}
    cct = port_bound([c.arrival for c in coflows], [demand[c.id] for c in coflows],
                     [alone[c.id] for c in coflows], fabric.capacity) / len(coflows)
    stages = {}
    for c in coflows:
        if c.stage_key is not None:
            stages.setdefault(c.stage_key, []).append(c)
    if not stages:
        return {"avg_cct": cct, "avg_sct": None}
    starts = [min(c.arrival for c in m) for m in stages.values()]
    sct = port_bound(starts, [sum(demand[c.id] for c in m) for m in stages.values()],
                     [max(c.arrival - r + alone[c.id] for c in m)
                      for r, m in zip(starts, stages.values())],
                     fabric.capacity) / len(stages)
    return {"avg_cct": cct, "avg_sct": sct}


def search_bounds(workload):
    """{"avg_cct": ..., "avg_sct": ...} for a SearchWorkload, before it runs."""
    fabric = workload.fabric
    gap = workload.params.task_gap
    starts, demands, alone = [], [], []
    ccts, nstages = [], 0
    for u, stages in enumerate(workload.tasks.values()):
        d = np.zeros(fabric.ports)
        chain = 0.0
        for s in stages:
            nstages += 1
            slowest = 0.0
            for j in s.jobs:
                per = fabric.demand(j.flows)
                t = float(np.max(per / fabric.capacity))
                d += s.iterations * per
                slowest = max(slowest, s.iterations * (j.compute + t))
                ccts += [t] * s.iterations
            chain += slowest
        starts.append(u * gap)
        demands.append(d)
        alone.append(chain)
    return {"avg_cct": float(np.mean(ccts)),
            "avg_sct": port_bound(starts, demands, alone, fabric.capacity) / nstages}
