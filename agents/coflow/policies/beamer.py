"""Beamer, stage-aware coflow scheduling (He, Cai, Zhou, Sun, Luo, Yu, Luo,
IEEE TNSM 19(2), 2022).  Only the abstract is public: "order coflows using
stage information, then schedule them in that order".  This module is a
reconstruction, not the paper's algorithm.

Default (`ordering="stages"`):
1. Each active stage's demand per port is its jobs' remaining network
   work: the bytes left of the job's coflow in flight plus, when the job's
   remaining iterations are known (`iterations_left`), that many times its
   per-iteration demand.  Jobs computing between coflows still count.
2. Stages are ordered by BSSI (Sincronia's primal-dual) on those demands,
   weight 1 per stage (`stage_weight="jobs"`: the number of its jobs).
3. Inside a stage, the job with the longest remaining finish time goes
   first (`within="time"`): remaining iterations x (compute time +
   the coflow's bottleneck time alone); the stage's time is its slowest
   job's.  `within="demand"`: BSSI on each job's remaining demand,
   reversed, i.e. the heaviest job first.
4. Rates: greedy, order-preserving and work-conserving, as in Sincronia.

`ordering="coflows"`: BSSI directly on the coflows, each with its job's
remaining demand and weight 1 / (jobs in its stage), so every stage weighs
the same whatever its size.  The order is recomputed on every arrival and
departure (`reorder="arrivals"`: on arrivals only).  A coflow that names
no stage is a stage of its own.  Ties keep arrival order.
"""

import numpy as np

from agents.plugins import Option

from agents.coflow.allocation import bssi
from agents.coflow.policies.base import OrderedPolicy, remaining_sizes, reorder_option

ORDERINGS = ("stages", "coflows")
WITHIN = ("time", "demand")
STAGE_WEIGHTS = ("one", "jobs")
DEMANDS = ("remaining", "next")


class _Job:
    def __init__(self, stage, flows, compute):
        self.stage = stage
        self.flows = flows
        self.compute = compute
        self.per_iteration = None
        self.bottleneck = None
        self.iterations_left = 0
        self.coflow = None


class Beamer(OrderedPolicy):
    NAME = "beamer"
    DESCRIPTION = "Beamer (reconstructed): stage-aware, stages ordered by BSSI on their demand"
    OPTIONS = (
        Option("ordering", "stages", "order stages, then jobs within them, or the coflows "
               "directly", choices=ORDERINGS),
        Option("within", "time", "within a stage: the longest remaining time first, or the "
               "heaviest job", choices=WITHIN),
        Option("stage_weight", "one", "a stage's weight in BSSI: 1, or its number of jobs",
               choices=STAGE_WEIGHTS),
        Option("demand", "remaining", "a job's demand in its stage's: all its remaining "
               "iterations', or the next one's", choices=DEMANDS),
        reorder_option("events"),
    )

    def __init__(self, ordering="stages", within="time", stage_weight="one", demand="remaining",
                 reorder="events"):
        super().__init__(reorder)
        for value, allowed, what in ((ordering, ORDERINGS, "ordering"), (within, WITHIN, "within"),
                                     (stage_weight, STAGE_WEIGHTS, "stage_weight"),
                                     (demand, DEMANDS, "demand")):
            if value not in allowed:
                raise ValueError(f"beamer {what} must be one of {', '.join(allowed)}, not {value!r}")
        self.ordering, self.within, self.stage_weight = ordering, within, stage_weight
        self.demand = demand
        self.jobs = {}
        self.fabric = None

    @staticmethod
    def job_key(coflow):
        return ("job", coflow.task, coflow.job) if coflow.job is not None else ("coflow", coflow.id)

    @staticmethod
    def stage_key(coflow):
        return coflow.stage_key if coflow.stage is not None else ("coflow", coflow.id)

    def on_arrival(self, coflow, now):
        super().on_arrival(coflow, now)
        key = self.job_key(coflow)
        job = self.jobs.get(key)
        if job is None:
            job = self.jobs[key] = _Job(self.stage_key(coflow), coflow.flows, coflow.compute)
        job.coflow = coflow
        job.iterations_left = coflow.iterations_left

    def on_departure(self, coflow, now):
        super().on_departure(coflow, now)
        key = self.job_key(coflow)
        job = self.jobs.get(key)
        if job is not None:
            job.coflow = None
            if job.iterations_left <= 0:
                del self.jobs[key]

    def _job_demand(self, job, remaining, fabric):
        if job.per_iteration is None:
            job.per_iteration = fabric.demand(job.flows)
            job.bottleneck = float(np.max(job.per_iteration / fabric.capacity))
        if job.coflow is None:
            return job.per_iteration if self.demand == "next" else job.iterations_left * job.per_iteration
        in_flight = fabric.demand(job.coflow.flows, remaining_sizes(job.coflow, remaining))
        return in_flight if self.demand == "next" else in_flight + job.iterations_left * job.per_iteration

    @staticmethod
    def _finish_time(job):
        return (job.iterations_left + (job.coflow is not None)) * (job.compute + job.bottleneck)

    def compute_order(self, now, active, remaining, fabric):
        # The jobs whose coflow is in flight, by stage, in arrival order.
        jobs = [self.jobs[self.job_key(c)] for c in active.values()]
        demand = {id(j): self._job_demand(j, remaining, fabric) for j in jobs}
        stage_jobs = {}
        for job in self.jobs.values():
            stage_jobs.setdefault(job.stage, []).append(job)
            if id(job) not in demand:
                demand[id(job)] = self._job_demand(job, remaining, fabric)
        if self.ordering == "coflows":
            weights = [1.0 / len(stage_jobs[j.stage]) for j in jobs]
            rows = np.array([demand[id(j)] for j in jobs])
            return [jobs[i].coflow.id for i in bssi(rows, weights)] if jobs else []
        stages = list(dict.fromkeys(j.stage for j in jobs))
        rows = np.array([sum(demand[id(j)] for j in stage_jobs[s]) for s in stages])
        weights = [1.0 if self.stage_weight == "one" else float(len(stage_jobs[s])) for s in stages]
        order = []
        for si in (bssi(rows, weights) if stages else []):
            members = [j for j in jobs if j.stage == stages[si]]
            if self.within == "time":
                members.sort(key=self._finish_time, reverse=True)
            else:
                pos = bssi(np.array([demand[id(j)] for j in members]), [1.0] * len(members))
                members = [members[i] for i in reversed(pos)]
            order.extend(j.coflow.id for j in members)
        return order
