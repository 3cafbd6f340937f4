"""Fair sharing, FIFO-LM and Beamer on small cases whose numbers are worked
out by hand; the per-port lower bound on hand-built cases."""

import numpy as np
import pytest

from agents.coflow.allocation import bssi
from agents.coflow.model import Coflow, Fabric, Flow
from agents.coflow.policies import make_policy
from testbed.coflow.bounds import srpt_completions, trace_bounds
from testbed.coflow.simulator import StaticSource, simulate


def one_flow(cid, src, dst, size, arrival=0.0, **kw):
    return Coflow(cid, arrival, (Flow(src, dst, size),), **kw)


def test_fair_sharing_is_max_min_by_progressive_filling():
    # f1 0->1 (6), f2 0->2 (2), f3 2->1 (6), f4 3->1 (6); every port has capacity 1.
    # out1 carries f1, f3, f4: 1/3 each (the tightest share, in0 would give 1/2);
    # f2 takes what in0 has left: 1 - 1/3 = 2/3, and finishes at 2 / (2/3) = 3.
    # By then f1, f3, f4 have sent 1, have 5 left at 1/3 each: 3 + 15 = 18.
    coflows = [one_flow(1, 0, 1, 6), one_flow(2, 0, 2, 2), one_flow(3, 2, 1, 6),
               one_flow(4, 3, 1, 6)]
    fabric = Fabric(4)
    policy = make_policy("fair")
    active = {c.id: c for c in coflows}
    rates = policy.rates(0.0, active, {(c.id, 0): c.flows[0].size for c in coflows}, fabric)
    assert rates == pytest.approx({(1, 0): 1 / 3, (2, 0): 2 / 3, (3, 0): 1 / 3, (4, 0): 1 / 3})
    result = simulate(make_policy("fair"), fabric, StaticSource(coflows))
    assert result.cct == pytest.approx({1: 18.0, 2: 3.0, 3: 18.0, 4: 18.0})
    assert result.avg_cct == pytest.approx(57 / 4)


def three_on_one_link():
    # Everything goes 0 -> 1 over ports of capacity 1: sizes 4, 2, 1, all at time 0.
    return [one_flow(1, 0, 1, 4), one_flow(2, 0, 1, 2), one_flow(3, 0, 1, 1)]


def test_fifo_lm_admits_the_next_coflow_when_the_head_turns_heavy():
    # Threshold 3.  Level 1: coflow 1 alone at rate 1; at t=3 it has sent 3, is heavy,
    # the level becomes 2 and coflow 2 shares: 1/2 each.  Coflow 1 has 1 left: done at
    # t=5, when coflow 2 has 1 left, now alone at rate 1: done at 6.  Coflow 3: 6 -> 7.
    result = simulate(make_policy("fifo-lm", threshold=3), Fabric(2),
                      StaticSource(three_on_one_link()))
    assert result.cct == pytest.approx({1: 5.0, 2: 6.0, 3: 7.0})
    assert result.order == [1, 2, 3]


def test_fifo_lm_takes_its_threshold_from_a_percentile_of_sizes_seen():
    # Median of 4, 2, 1 is 2: coflow 1 is heavy at t=2; then 1 and 2 share, 2 left each at
    # 1/2: both done at t=6; coflow 3 at 7.  (Fair sharing gives 7, 5, 3; plain FIFO 4, 6, 7.)
    result = simulate(make_policy("fifo-lm", percentile=50), Fabric(2),
                      StaticSource(three_on_one_link()))
    assert result.cct == pytest.approx({1: 6.0, 2: 6.0, 3: 7.0})
    fair = simulate(make_policy("fair"), Fabric(2), StaticSource(three_on_one_link()))
    assert fair.cct == pytest.approx({1: 7.0, 2: 5.0, 3: 3.0})


def test_fifo_lm_gives_leftover_capacity_to_the_next_coflow_in_fifo_order():
    # Coflow 1 uses 0 -> 1 only; coflow 2 (2 -> 0) shares no port with it, so it is not
    # blocked by the multiplexing level: both run at rate 1 from t=0.
    coflows = [one_flow(1, 0, 1, 4), one_flow(2, 2, 0, 2)]
    result = simulate(make_policy("fifo-lm", threshold=100), Fabric(3), StaticSource(coflows))
    assert result.cct == pytest.approx({1: 4.0, 2: 2.0})


def stage_sets():
    # Stage A (task t0) has jobs a1 and a2, stage B (task t1) has b1; 4 machines.
    # a1: 0->1 size 2, one more iteration after this one, no compute: demand in0 4, out1 4.
    # a2: 0->1 size 1, last iteration, compute 10.            demand in0 1, out1 1.
    # b1: 2->1 size 4, last iteration.                         demand in2 4, out1 4.
    return [
        Coflow("a1", 0, (Flow(0, 1, 2),), task="t0", stage="A", job="a1", iterations_left=1),
        Coflow("a2", 0, (Flow(0, 1, 1),), task="t0", stage="A", job="a2", compute=10.0),
        Coflow("b1", 0, (Flow(2, 1, 4),), task="t1", stage="B", job="b1"),
    ]


def beamer_order(**params):
    policy = make_policy("beamer", **params)
    coflows = stage_sets()
    for c in coflows:
        policy.on_arrival(c, 0.0)
    return policy.order(0.0, {c.id: c for c in coflows},
                        {(c.id, 0): c.flows[0].size for c in coflows}, Fabric(4))


def test_beamer_orders_stages_by_bssi_then_the_longest_remaining_job_first():
    # Stage demands: A = in0 5, out1 5 (a1's next iteration counts); B = in2 4, out1 4.
    # Bottleneck out1 (9); weight/demand: A 1/5 < B 1/4, so A goes last (without a1's next
    # iteration A would be 3 and B last).  Inside A, remaining time: a1 2 x (0 + 2) = 4,
    # a2 1 x (10 + 1) = 11: a2 first.
    assert beamer_order() == ["b1", "a2", "a1"]


def test_beamer_variants_order_as_worked_out():
    # (a) stage weight = jobs: A 2/5 > B 1/4, so B goes last.
    assert beamer_order(stage_weight="jobs") == ["a2", "a1", "b1"]
    # (c) within a stage the heaviest job first: BSSI on a1 (4, 4) and a2 (1, 1) at in0
    # puts a1 last; reversed, a1 first.
    assert beamer_order(within="demand") == ["b1", "a1", "a2"]
    # (b) BSSI on coflows with their jobs' demands, weights 1/2, 1/2, 1: at out1 (9)
    # a1 0.5/4 is smallest, goes last, beta 1/8: a2 0.5 - 1/8 = 0.375, b1 1 - 4/8 = 0.5;
    # at out1 (5) b1 0.5/4 < a2 0.375/1: b1 last of the two.
    assert beamer_order(ordering="coflows") == ["a2", "b1", "a1"]
    # (d) the next iteration's demand only: A = in0 3, out1 3 (a1's next iteration left out),
    # B = out1 4; at out1 (7) B 1/4 < A 1/3, so B goes last; inside A as by default.
    assert beamer_order(demand="next") == ["a2", "a1", "b1"]


def test_sincronia_orders_the_same_stage_sets_without_stages():
    # Coflow demands at out1: a1 2, a2 1, b1 4.  b1 (1/4) goes last, beta 1/4: a1 1/2,
    # a2 3/4; then a1 (1/4) last: a2, a1, b1.
    policy = make_policy("sincronia")
    coflows = stage_sets()
    order = policy.order(0.0, {c.id: c for c in coflows},
                         {(c.id, 0): c.flows[0].size for c in coflows}, Fabric(4))
    assert order == ["a2", "a1", "b1"]


def test_bssi_breaks_ties_at_the_first_port_and_first_coflow():
    # Two identical coflows: the first is selected last only if ties pick the later one;
    # the reference takes the first minimum, so coflow 0 goes last.
    assert bssi(np.array([[1.0, 1.0], [1.0, 1.0]]), [1, 1]) == [1, 0]


def test_srpt_runs_the_shortest_remaining_job_on_one_port():
    # Job 0 (3 units) from t=0, job 1 (1 unit) from t=1: at t=1 job 0 has 2 left > 1,
    # so job 1 runs 1..2 and job 0 ends at 4.
    assert srpt_completions([0.0, 1.0], [3.0, 1.0]) == [4.0, 2.0]


def test_the_port_bound_is_the_shortest_first_sum_on_a_shared_port():
    # Sizes 1, 2, 3 over one link: shortest first ends at 1, 3, 6; average 10/3, which
    # Sincronia reaches; fair sharing cannot beat it.
    coflows = [one_flow(1, 0, 1, 3), one_flow(2, 0, 1, 1), one_flow(3, 0, 1, 2)]
    bound = trace_bounds(coflows, Fabric(2))
    assert bound["avg_cct"] == pytest.approx(10 / 3)
    assert simulate(make_policy("sincronia"), Fabric(2), StaticSource(coflows)).avg_cct \
        == pytest.approx(10 / 3)
    assert simulate(make_policy("fair"), Fabric(2), StaticSource(coflows)).avg_cct > 10 / 3


def test_the_port_bound_counts_coflows_elsewhere_by_their_own_time():
    # Port in0 carries 1 and 2 (SPT: 1, 3); coflow 3 (size 5) is on 2 -> 0 alone: 5.
    # Bound at in0: (1 + 3 + 5) / 3 = 3; at in2: 5 + the others alone (1 + 2) = 8 / 3.
    coflows = [one_flow(1, 0, 1, 1), one_flow(2, 0, 1, 2), one_flow(3, 2, 0, 5)]
    assert trace_bounds(coflows, Fabric(3))["avg_cct"] == pytest.approx(3.0)


def test_the_stage_bound_adds_a_stage_to_its_latest_coflow():
    # Stage s: coflows at 0 (size 1) and at 4 (size 1) on 0 -> 1; the stage cannot end
    # before 4 + 1 = 5, although its port work is only 2.
    coflows = [one_flow(1, 0, 1, 1, stage="s"), one_flow(2, 0, 1, 1, arrival=4.0, stage="s")]
    assert trace_bounds(coflows, Fabric(2))["avg_sct"] == pytest.approx(5.0)


@pytest.mark.parametrize("capacity", [1.0, 4e6])
def test_varys_leaves_a_coflow_behind_a_port_its_leader_filled_without_a_share(capacity):
    # A: one-chunk pushes 0, 1, 2 -> 3; B: 64 chunks 0 -> 3.  A's bottleneck,
    # machine 3's egress, is 3 chunks against B's 64, so A goes first: MADD
    # gives each push capacity / 3, which fills that port.  In floating point,
    # taking a third of it three times leaves 2^-53 of 1 and 2^-31 of 4e6 (a
    # loopback search once stalled with a flow paced at 2^-32 B/s): B, whose
    # only flow needs that port, gets nothing, not that dust.
    chunk = 16384.0
    a = Coflow("A", 0.0, tuple(Flow(w, 3, chunk) for w in range(3)))
    b = one_flow("B", 0, 3, 64 * chunk)
    fabric = Fabric(4, [capacity] * 4, [capacity] * 4)
    remaining = {("A", i): chunk for i in range(3)} | {("B", 0): 64 * chunk}
    policy = make_policy("varys")
    rates = policy.rates(0.0, {"A": a, "B": b}, remaining, fabric)
    assert rates == {("A", i): capacity / 3 for i in range(3)}
    # Once A is done, B has the port to itself.
    policy.on_departure(a, 1.0)
    assert policy.rates(1.0, {"B": b}, {("B", 0): 64 * chunk}, fabric) == {("B", 0): capacity}
