"""The live scheduler's bookkeeping on hand-checked cases: the rates it
hands out on arrivals and departures, its estimate of the bytes left and
how senders' reports correct it, gated pulls, and what an unpaced policy
tells senders."""

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
    sched = LiveScheduler(make_policy("sincronia"), Fabric(2), chunk_bytes=0.5)
    sched.arrive(Coflow(1, 0.0, (Flow(0, 1, 2.0),)), 0.0)
    # At t = 5 the fluid model says it ended at t = 2; only the report ends
    # it, and until then it may have two chunks (1.0) in its sender's queue.
    sched.tick(5.0)
    sched.arrive(Coflow(2, 5.0, (Flow(1, 0, 1.0),)), 5.0)
    assert sched.remaining[(1, 0)] == 1.0
    assert sched.rates[(1, 0)] == 1.0


def test_a_senders_report_replaces_an_estimate_more_than_two_chunks_off():
    sched = LiveScheduler(make_policy("sincronia"), Fabric(2), chunk_bytes=1.0)
    sched.arrive(Coflow(1, 0.0, (Flow(0, 1, 10.0),)), 0.0)
    # t = 4: the model says 6 left at rate 1; the sender has sent 5 (5 left):
    # one chunk off is a sender on pace, and the estimate stands.
    assert sched.progress({(1, 0): 5.0}, 4.0) == {}
    assert sched.remaining[(1, 0)] == pytest.approx(6.0) and sched.resyncs == 0
    # t = 5: the model says 5 left, the sender has sent 2 (8 left): three
    # chunks off, so the sender's figure wins.  A flow that ended is ignored.
    assert sched.progress({(1, 0): 2.0, (9, 0): 1.0}, 5.0) == {}
    assert sched.remaining[(1, 0)] == pytest.approx(8.0) and sched.resyncs == 1


def test_a_pull_waiting_for_a_push_with_no_rate_leaves_its_ports_to_others():
    sched = LiveScheduler(make_policy("sincronia"), Fabric(3), chunk_bytes=1.0)
    z = Coflow("Z", 0.0, (Flow(1, 0, 1.0),))
    # X: a push 1 -> 0 and the pull 0 -> 2 that forwards its bytes.
    x = Coflow("X", 0.0, (Flow(1, 0, 4.0), Flow(0, 2, 4.0)))
    w = Coflow("W", 0.0, (Flow(0, 2, 8.0),))
    sched.arrive(z, 0.0)
    sched.arrive(x, 0.0, gates={1: [0]})
    sched.arrive(w, 0.0)
    # BSSI: in0 and eg2 carry 12 each, in0 first: W (1/8) goes last, X's
    # weight drops to 1 - 4/8; then on in1, X (0.5/4) goes after Z (1/1).
    # Order Z, X, W.  Z takes in1 and eg0, so X's push gets nothing; its
    # pull, which has nothing to forward, is closed, and W takes in0, eg2.
    assert sched.rates == {("Z", 0): 1.0, ("W", 0): 1.0}
    assert sched.closed == {("X", 1)}
    # Z ends at t = 1: the order is now X, W; X's push gets in1 and eg0,
    # and its pull may send once the push is a chunk ahead, at t = 2.
    _, changed = sched.flow_finished("Z", 0, 1.0)
    assert changed == {("X", 0): 1.0} and sched.closed == {("X", 1)}
    assert sched.wake_at == pytest.approx(2.0)
    # Then the pull opens and, X being ahead of W, takes in0 and eg2.
    assert sched.tick(2.0) == {("X", 1): 1.0, ("W", 0): 0.0}
    assert not sched.closed


def test_without_its_gate_the_pull_would_hold_the_ports_it_cannot_use():
    sched = LiveScheduler(make_policy("sincronia"), Fabric(3), chunk_bytes=1.0)
    sched.arrive(Coflow("Z", 0.0, (Flow(1, 0, 1.0),)), 0.0)
    sched.arrive(Coflow("X", 0.0, (Flow(1, 0, 4.0), Flow(0, 2, 4.0))), 0.0)
    sched.arrive(Coflow("W", 0.0, (Flow(0, 2, 8.0),)), 0.0)
    assert sched.rates == {("Z", 0): 1.0, ("X", 1): 1.0}


def test_fair_sharing_models_rates_but_leaves_senders_unpaced():
    sched = LiveScheduler(make_policy("fair"), Fabric(2))
    changed = sched.arrive(Coflow(1, 0.0, (Flow(0, 1, 2.0), Flow(0, 1, 2.0))), 0.0)
    # Two flows on one port: max-min gives each half.
    assert changed == {(1, 0): 0.5, (1, 1): 0.5}
    assert sched.sent_rate((1, 0)) is None


def test_flow_ids_name_the_coflow_and_the_flow():
    assert flow_id(12, 3) == "12:3"
