"""The live scheduler's bookkeeping on hand-checked cases: the rates it
hands out on arrivals and departures, its estimate of the bytes left, and
what an unpaced policy tells senders."""

import pytest

from agents.coflow.live import LiveScheduler, flow_id
from agents.coflow.model import Coflow, Fabric, Flow
from agents.coflow.policies import make_policy


def test_a_small_coflow_preempts_a_large_one_and_gives_it_back_the_port():
    sched = LiveScheduler(make_policy("sincronia"), Fabric(2))
    a = Coflow("A", 0.0, (Flow(0, 1, 4.0),))
    b = Coflow("B", 1.0, (Flow(0, 1, 1.0),))
    # A alone: the whole port, 1 unit/s.
    assert sched.arrive(a, 0.0) == {("A", 0): 1.0}
    # At t = 1 A has 3 left; BSSI on port 0 (load 4) puts A last (1/3 < 1/1):
    # B takes the port, A stops.
    assert sched.arrive(b, 1.0) == {("A", 0): 0.0, ("B", 0): 1.0}
    assert sched.remaining[("A", 0)] == pytest.approx(3.0)
    # B's receiver reports at t = 2: B is complete and A gets the port back,
    # still 3 left (it sent nothing while stopped).
    done, changed = sched.flow_finished("B", 0, 2.0)
    assert done is b and changed == {("A", 0): 1.0}
    assert sched.remaining[("A", 0)] == pytest.approx(3.0)
    assert list(sched.active) == ["A"]


def test_a_coflow_is_complete_only_when_every_flow_is():
    sched = LiveScheduler(make_policy("sincronia"), Fabric(3))
    c = Coflow(7, 0.0, (Flow(0, 2, 2.0), Flow(1, 2, 2.0)))
    # Two flows into machine 2's egress port: greedy, in order, gives the
    # first the whole port and the second nothing.
    assert sched.arrive(c, 0.0) == {(7, 0): 1.0}
    done, changed = sched.flow_finished(7, 0, 2.0)
    assert done is None and changed == {(7, 1): 1.0}
    done, _ = sched.flow_finished(7, 1, 4.0)
    assert done is c and not sched.active


def test_an_estimate_never_ends_a_flow_before_its_receiver_does():
    sched = LiveScheduler(make_policy("sincronia"), Fabric(2))
    sched.arrive(Coflow(1, 0.0, (Flow(0, 1, 2.0),)), 0.0)
    # At t = 5 the fluid model says it ended at t = 2; only the report ends it.
    sched.tick(5.0)
    sched.arrive(Coflow(2, 5.0, (Flow(1, 0, 1.0),)), 5.0)
    assert sched.remaining[(1, 0)] == 1.0
    assert (1, 0) in sched.rates


def test_fair_sharing_models_rates_but_leaves_senders_unpaced():
    sched = LiveScheduler(make_policy("fair"), Fabric(2))
    changed = sched.arrive(Coflow(1, 0.0, (Flow(0, 1, 2.0), Flow(0, 1, 2.0))), 0.0)
    # Two flows on one port: max-min gives each half.
    assert changed == {(1, 0): 0.5, (1, 1): 0.5}
    assert sched.sent_rate((1, 0)) is None


def test_flow_ids_name_the_coflow_and_the_flow():
    assert flow_id(12, 3) == "12:3"
