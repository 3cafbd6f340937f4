"""The live scheduler driving senders it cannot see, on random PS jobs:
every flow arrives whole, every coflow completes exactly once, and in
bounded time, under every paced policy, even when senders keep only a
part of the rates they are given (the fluid model then runs ahead of
them) and a PS may forward chunk k of its pulls only once chunk k of
every push is in.

The senders here step through time as machines do: each flow has a token
bucket of one chunk filling at its rate times its sender's share and
sends whole chunks, a pull no further than its pushes have delivered;
delivery is instant; the senders report what they have sent every
REPORT_EVERY seconds."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.coflow.live import LiveScheduler
from agents.coflow.model import Coflow, Fabric, Flow
from agents.coflow.policies import make_policy

CHUNK = 0.25
STEP = 0.02
REPORT_EVERY = 0.1


@st.composite
def ps_jobs(draw):
    machines = draw(st.integers(2, 4))
    jobs = []
    for j in range(draw(st.integers(1, 5))):
        ps = draw(st.integers(0, machines - 1))
        others = [m for m in range(machines) if m != ps]
        workers = draw(st.lists(st.sampled_from(others), min_size=1, max_size=len(others), unique=True))
        size = CHUNK * draw(st.integers(1, 12))
        flows = tuple(Flow(w, ps, size) for w in workers) + tuple(Flow(ps, w, size) for w in workers)
        jobs.append(Coflow(j, draw(st.floats(0.0, 2.0)), flows))
    share = draw(st.floats(0.3, 1.0))
    return machines, sorted(jobs, key=lambda c: c.arrival), share


def gates_of(c):
    ps = c.flows[0].dst
    pushes = [i for i, f in enumerate(c.flows) if f.dst == ps]
    return {i: pushes for i, f in enumerate(c.flows) if f.src == ps}


def run(policy, machines, jobs, share):
    """Runs the jobs to the end; returns ({flow key: bytes delivered},
    [coflow ids in completion order], the time it took)."""
    sched = LiveScheduler(make_policy(policy), Fabric(machines), chunk_bytes=CHUNK)
    pending = list(jobs)
    gates = {c.id: gates_of(c) for c in jobs}
    sent = {(c.id, i): 0.0 for c in jobs for i in range(len(c.flows))}
    size = {(c.id, i): f.size for c in jobs for i, f in enumerate(c.flows)}
    ended, completed = set(), []
    credit = {}

    def gate_allows(key):
        """Bytes a flow may have sent: a pull's chunk k needs chunk k of every push."""
        cid, i = key
        if i not in gates[cid]:
            return size[key]
        return min(size[(cid, g)] if (cid, g) in ended else
                   CHUNK * math.floor(sent[(cid, g)] / CHUNK + 1e-9) for g in gates[cid][i])

    total = sum(size.values())
    # Serially, at the senders' share of one port, with a report's delay
    # per flow and a gate's chunk per pull: anything slower is a stall.
    limit = max(c.arrival for c in jobs) + total / share + len(sent) * (REPORT_EVERY + CHUNK / share) + 1
    now, next_report = 0.0, REPORT_EVERY
    while pending or sched.active:
        assert now < limit, f"{policy}: stalled at t = {now:.2f} with {sched.remaining}"
        while pending and pending[0].arrival <= now:
            c = pending.pop(0)
            sched.arrive(c, now, gates=gates[c.id])
        sched.tick(now)
        for key, rate in list(sched.rates.items()):
            # A token bucket of one chunk: whole chunks, none at a rate too
            # small to earn one.
            credit[key] = min(CHUNK, credit.get(key, CHUNK) + rate * share * STEP)
            while sent[key] < size[key] and credit[key] >= min(CHUNK, size[key] - sent[key]) - 1e-12 \
                    and sent[key] < gate_allows(key):
                step = min(CHUNK, size[key] - sent[key])
                sent[key] += step
                credit[key] -= step
        for key in [k for k in sched.remaining if sent[k] >= size[k] - 1e-9]:
            ended.add(key)
            done, _ = sched.flow_finished(*key, now)
            if done is not None:
                completed.append(done.id)
        now += STEP
        if now >= next_report:
            sched.progress({k: sent[k] for k in sched.remaining}, now)
            next_report += REPORT_EVERY
    return sent, completed, now


@settings(max_examples=300, deadline=None)
@given(ps_jobs(), st.sampled_from(["varys", "sincronia", "fifo-lm", "beamer"]))
def test_every_pull_and_push_arrives_whole_and_every_coflow_completes_once(case, policy):
    machines, jobs, share = case
    sent, completed, _ = run(policy, machines, jobs, share)
    assert sorted(completed) == sorted(c.id for c in jobs)
    for c in jobs:
        for i, f in enumerate(c.flows):
            assert abs(sent[(c.id, i)] - f.size) < 1e-9


def test_a_pull_follows_its_push_when_the_sender_keeps_half_its_rate():
    # One job, PS on machine 0, one worker: push 1 -> 0 and the pull back,
    # four chunks each.  MADD gives both the whole port (rate 1); at half
    # of it a chunk takes 0.5 s.  Each bucket starts full, so the push's
    # chunks go at t = 0, 0.5, 1.0, 1.5 and the pull forwards each in the
    # same step: both end at 1.5 s, and the search one step later.
    job = Coflow(0, 0.0, (Flow(1, 0, 1.0), Flow(0, 1, 1.0)))
    _, completed, took = run("varys", 2, [job], 0.5)
    assert completed == [0]
    assert took == pytest.approx(1.5 + STEP)
