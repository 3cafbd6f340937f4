"""Every sync scheme trains the quickstart over the real emulated WAN to its
accuracy floor, each doing what makes it that scheme; and a worker whose
compute speed drops tenfold mid-run stalls SSGD's other workers but not
FedAsync's or NBSync's."""

import os
import statistics

import pytest

from agents.events import read_events
from tests.mininet.helpers import ROOT, run_topology

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")
WORKERS = [f"{dc}-w{i}" for dc in ("virginia", "frankfurt", "tokyo") for i in (0, 1)]


def events(run, agent, kind):
    return [e for e in read_events(os.path.join(run, "agents", f"{agent}.jsonl")) if e["ev"] == kind]


@pytest.mark.parametrize("sync", ["fedavg", "fedasync", "esync", "nbsync"])
def test_each_scheme_trains_the_quickstart_to_the_accuracy_floor(tmp_path, sync):
    text = open(QUICKSTART).read().replace("sync: ssgd", f"sync: {sync}")
    run, summary = run_topology(tmp_path, sync, text)
    assert (summary["status"], summary["stopped_by"], summary["target_reached"]) == \
        ("completed", "target_accuracy", True)
    assert summary["sync"] == sync and summary["final_accuracy"] >= 0.9
    rounds = {w: events(run, w, "iter") for w in WORKERS}
    done = {w: events(run, w, "done")[0] for w in WORKERS}
    assert all(rounds.values())
    if sync == "fedasync":
        # Models are mixed in one at a time, each by its staleness.
        mixes = events(run, "virginia-s0", "mix")
        assert len(mixes) == sum(len(r) for r in rounds.values())
        assert {m["worker"] for m in mixes} == set(WORKERS)
        assert all(m["staleness"] >= 0 and 0 < m["alpha"] <= 0.6 for m in mixes)
        return
    # Synchronous rounds: everyone ends holding the same global model.
    assert len({d["model"] for d in done.values()}) == 1
    steps = [e["steps"] for r in rounds.values() for e in r]
    if sync == "fedavg":
        assert set(steps) == {10}
    elif sync == "esync":
        # The state server decided when each worker was ready, once per round.
        ready = events(run, "virginia-c", "decision")
        assert {d["worker"] for d in ready} == set(WORKERS)
        assert len(ready) == sum(len(r) for r in rounds.values())
        assert min(steps) >= 1
    else:
        # Computing never waits: most of each synchronization is spent computing.
        assert statistics.median(e["overlap"] for r in rounds.values() for e in r) > 0.5
        assert all(e["wait"] == 0.0 for r in rounds.values() for e in r)
    assert len(set(steps)) > 1 or sync == "fedavg"


SLOWDOWN = """\
name: slowdown
datacenters:
  - {name: east, servers: 1, workers: 2}
  - {name: west, workers: 1}
wan:
  - {between: [east, west], bw: 20mbit, delay: 10ms}
experiment:
  sync: SYNC
  overlay: ps
  workload: synthetic
  model: flat-20000
  compute_time: 50ms
  stop: {iterations: 100000, time: 10s}
dynamics:
  - {at: 4s, worker: east-w1, speed: 0.1}
"""


SLOW_COMPUTE = 0.5          # seconds a step of east-w1 takes at speed 0.1 of 50 ms


def step_rate(rounds, start, end):
    """Local steps per second from the rounds that ended within [start, end]."""
    inside = [e for e in rounds if start <= e["t"] <= end]
    if len(inside) < 2:
        return 0.0
    return sum(e["steps"] for e in inside[1:]) / (inside[-1]["t"] - inside[0]["t"])


@pytest.mark.parametrize("sync,stalls", [("ssgd", True), ("fedasync", False), ("nbsync", False)])
def test_a_tenfold_slower_worker_stalls_only_the_synchronous_scheme(tmp_path, sync, stalls):
    run, summary = run_topology(tmp_path, sync, SLOWDOWN.replace("SYNC", sync))
    assert summary["stopped_by"] == "time", summary["reason"]
    (change,) = events(run, "east-w1", "speed")
    assert change["speed"] == 0.1
    for fast in ("east-w0", "west-w0"):
        rounds = events(run, fast, "iter")
        before = step_rate(rounds, change["t"] - 3, change["t"])
        after = step_rate(rounds, change["t"] + 1.5, rounds[-1]["t"])
        assert before > 0, fast
        # SSGD waits for the slow worker every step, so it steps no more often
        # than that worker computes (0.5 s instead of 0.05 s), on a machine of
        # any speed; the others go on at their own pace.
        if stalls:
            limit = 1.1 / SLOW_COMPUTE
            assert before > 1.25 * limit, (fast, before)         # else no stall could show
            assert after <= limit, (fast, before, after)
        else:
            assert after / before > 0.6, (fast, before, after)
