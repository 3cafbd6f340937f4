"""A peer's send queue shares the connection among flows by weight
(start-time fair queuing), keeps the head once picked, and keeps the order
of messages without a flow."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.transport.fairqueue import FairQueue


def drain(q):
    out = []
    while q:
        out.append(q.popleft())
    return out


def test_two_backlogged_flows_alternate_by_weight():
    q = FairQueue()
    for i in range(4):
        q.append(("a", i), flow="a", weight=3.0, size=3)    # tags 0, 1, 2, 3
    for i in range(4):
        q.append(("b", i), flow="b", weight=1.0, size=3)    # tags 0, 3, 6, 9
    # Ties in arrival order: a0 (0), b0 (0), a1 (1), a2 (2), a3 (3), b1 (3), b2, b3.
    assert drain(q) == [("a", 0), ("b", 0), ("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("b", 3)]


def test_the_head_stays_once_picked_and_unflowed_messages_keep_their_order():
    q = FairQueue()
    q.append("slow-1", flow="slow", weight=1.0, size=100)
    assert q[0] == "slow-1"                               # picked: its chunks may be on the wire
    q.append("fast-1", flow="fast", weight=100.0, size=1)
    assert q[0] == "slow-1" and len(q) == 2
    q.popleft()
    q.append("plain-1")
    q.append("plain-2")
    assert drain(q) == ["fast-1", "plain-1", "plain-2"]


def test_a_flow_back_from_idle_gets_no_credit_for_its_idle_time():
    q = FairQueue()
    for i in range(3):
        q.append(("a", i), flow="a", weight=1.0, size=10)
    assert [q.popleft() for _ in range(2)] == [("a", 0), ("a", 1)]    # virtual time now 10
    q.append(("b", 0), flow="b", weight=1.0, size=10)                  # starts at 10, not 0
    q.append(("b", 1), flow="b", weight=1.0, size=10)
    # b0 at 10 goes before a2 at 20; b1 at 20 ties with a2, which came first.  With
    # credit for its idle time b would start at 0 and send both before a2.
    assert drain(q) == [("b", 0), ("a", 2), ("b", 1)]


def test_a_weight_must_be_positive():
    with pytest.raises(ValueError, match="weight"):
        FairQueue().append("x", flow="a", weight=0.0, size=1)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 100)), max_size=60))
def test_every_message_leaves_once_and_each_flow_keeps_its_order(messages):
    q = FairQueue()
    weights = {"a": 1.0, "b": 2.5, "c": 7.0}
    for i, (flow, size) in enumerate(messages):
        q.append((flow, i), flow=flow, weight=weights[flow], size=size)
    out = drain(q)
    assert sorted(out, key=lambda m: m[1]) == [(f, i) for i, (f, _) in enumerate(messages)]
    for flow in "abc":
        mine = [i for f, i in out if f == flow]
        assert mine == sorted(mine)


class Unswept(FairQueue):
    """The queue without forgetting finish tags: what it serves is the reference."""

    def _sweep(self):
        self._sweep_at = float("inf")


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.sampled_from([0.5, 1.0, 4.0]),
                          st.integers(1, 5000), st.booleans()), max_size=400))
def test_forgetting_finish_tags_changes_nothing_served(ops):
    # Each op: a re-plan number and a flow in it (re-plans name new flows),
    # a weight, a size, and whether a message is taken off first.
    swept, reference = FairQueue(), Unswept()
    for n, (plan, flow, weight, size, take) in enumerate(ops):
        for q in (swept, reference):
            if take and q:
                q.popleft()
            q.append(n, flow=(plan, flow), weight=weight, size=size)
    assert drain(swept) == drain(reference)


def test_the_finish_tags_of_flows_from_past_re_plans_are_forgotten():
    q = FairQueue()
    for plan in range(2000):
        # A re-plan names four new flows; each sends a message, which leaves.
        for flow in range(4):
            q.append((plan, flow), flow=(plan, flow), weight=1.0, size=1000)
        drain(q)
    assert len(q._finish) < 200, len(q._finish)
