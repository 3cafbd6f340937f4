"""The probes' slot table: pairs that share a link direction never probe at
once, the period holds every slot, and the budget holds on every link."""

import pytest
from hypothesis import given, settings, strategies as st

from agents.probe import schedule
from testbed.spec.experiment import ProbeSettings
from testbed.run.runner import probe_settings
from tests.mininet.helpers import spec_of

FRAME_BITS = 1514 * 8


def pair(src, dst, path, delay, rate=20e6):
    return schedule.Pair(src, dst, tuple(zip(path, path[1:])), delay, rate)


# A line a - b - c, 20 ms one way per link.
LINE = [pair("a", "b", "ab", 0.02), pair("b", "c", "bc", 0.02), pair("a", "c", "abc", 0.04),
        pair("c", "b", "cb", 0.02), pair("b", "a", "ba", 0.02), pair("c", "a", "cba", 0.04)]


def test_the_two_way_pairs_go_first_and_the_one_hop_pairs_share_the_other_slot():
    # a->c conflicts with a->b and b->c, c->a with c->b and b->a: they go
    # first, together (they share nothing); every one-hop pair then fits in slot 1.
    assert schedule.colour(LINE) == [1, 1, 0, 1, 1, 0]


def test_a_slot_lasts_its_longest_train_plus_its_path_delay_plus_the_margin():
    t = schedule.table(LINE, period=0.2, train_time=0.1)
    # slot 0: 0.1 + 0.04 + 0.025 = 0.165; slot 1: 0.1 + 0.02 + 0.025 = 0.145
    assert t.widths == pytest.approx((0.165, 0.145))
    assert t.period == pytest.approx(0.31)               # stretched: 0.2 does not hold them
    assert t.offsets[("a", "c")] == 0.0 and t.offsets[("b", "a")] == pytest.approx(0.165)


def test_spare_time_of_a_long_period_is_shared_out_in_proportion():
    t = schedule.table(LINE, period=2.5, train_time=0.1)
    assert t.period == 2.5
    assert t.widths == pytest.approx((0.165 * 2.5 / 0.31, 0.145 * 2.5 / 0.31))
    assert t.offsets[("a", "b")] == pytest.approx(1.330645, abs=1e-6)


def test_a_slow_link_widens_the_slot_to_its_minimal_train():
    slow = [pair("a", "b", "ab", 0.0, rate=1e6)]
    # 16 frames at 1 Mbit/s: 0.193792 s, longer than the 0.1 s train time
    assert schedule.table(slow, 0.1, 0.1).widths == pytest.approx((0.193792 + 0.025,))


def test_every_probe_starts_at_the_first_period_boundary_after_it_started():
    assert schedule.next_round(100.0, 2.5, 99.0) == 100.0
    assert schedule.next_round(100.0, 2.5, 101.0) == 102.5
    assert schedule.next_round(100.0, 2.5, 102.5) == 102.5


def test_pairs_probing_every_few_periods_take_turns_by_slot():
    for r in range(8):
        assert [s for s in range(4) if schedule.fires(s, 4, r)] == [(-r) % 4]


def ring_with_chords(n, chords, rates, delays):
    names = [f"d{i}" for i in range(n)]
    edges = [(i, (i + 1) % n) for i in range(n)]
    for i in chords:
        chord = (i, (i + 3) % n)
        if n > 4 and not any({*chord} == {*e} for e in edges):
            edges.append(chord)
    lines = ["datacenters:"] + [f"  - {{name: {x}, workers: 0}}" for x in names] + ["wan:"]
    lines += [f"  - {{between: [{names[a]}, {names[b]}], bw: {rates[k % len(rates)]}mbit, "
              f"delay: {delays[k % len(delays)]}ms}}" for k, (a, b) in enumerate(edges)]
    return spec_of("\n".join(lines) + "\n")


@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 16), chords=st.sets(st.integers(0, 15), max_size=8),
       rates=st.lists(st.sampled_from([1, 5, 20, 50, 100]), min_size=1, max_size=6),
       delays=st.lists(st.integers(1, 80), min_size=1, max_size=6),
       period=st.sampled_from([0.5, 2.5, 10.0]), budget=st.sampled_from([0.01, 0.05, 0.2]))
def test_slots_of_random_rings_with_chords_never_share_a_link_and_keep_the_budget(
        n, chords, rates, delays, period, budget):
    spec = ring_with_chords(n, sorted(c for c in chords if c < n), rates, delays)
    probe = ProbeSettings(period=period, budget=budget, train_time=0.1)
    shared = probe_settings(spec, [], probe=probe)
    pairs = [schedule.Pair(q["src"], q["dst"], tuple(map(tuple, q["links"])), q["delay"], q["rate"])
             for q in shared["pairs"]]
    assert len(pairs) == n * (n - 1)
    t = schedule.table(pairs, period, probe.train_time)
    # Every pair has exactly one slot, and one start.
    assert set(t.slot_of) == set(t.offsets) == {(q.src, q.dst) for q in pairs}
    by_slot = {}
    for q in pairs:
        by_slot.setdefault(t.slot_of[(q.src, q.dst)], []).append(q)
    # No two pairs of a slot cross the same link direction.
    for members in by_slot.values():
        links = [link for q in members for link in q.links]
        assert len(links) == len(set(links))
    # The period holds the slots, and each slot its trains at their planned
    # size (sized from the configured rate) plus the path's delay.
    assert sum(t.widths) == pytest.approx(t.period) and t.period >= period
    rate = {(w.a, w.b): w.ab.rate for w in spec.wan} | {(w.b, w.a): w.ba.rate for w in spec.wan}
    load = {}
    for q in pairs:
        packets, every = schedule.train_plan(q, pairs, q.rate, t.period, budget, probe.train_time)
        s = t.slot_of[(q.src, q.dst)]
        assert t.offsets[(q.src, q.dst)] + packets * FRAME_BITS / q.rate + q.delay + schedule.MARGIN \
            <= sum(t.widths[:s + 1]) + 1e-9
        for link in q.links:
            load[link] = load.get(link, 0.0) + packets * FRAME_BITS / every
    # Probe bits per period on each link direction stay within the budget.
    for link, bits in load.items():
        assert bits <= budget * rate[link] * t.period * (1 + 1e-9), link


def test_with_neighbours_only_each_link_direction_is_probed_by_its_own_pair_alone():
    # A 6-ring with chords 0-3 and 2-5: 8 links, so 16 of the 30 ordered pairs.
    spec = ring_with_chords(6, [0, 2], [20, 5], [10, 30])
    everyone = probe_settings(spec, [], probe=ProbeSettings())["pairs"]
    near = probe_settings(spec, [], probe=ProbeSettings(pairs="neighbours"))["pairs"]
    assert len(everyone) == 30 and len(near) == 16
    assert all(q["links"] == [[q["src"], q["dst"]]] for q in near)
    assert {link for q in near for link in map(tuple, q["links"])} == \
        {link for q in everyone for link in map(tuple, q["links"])}
    assert near == [q for q in everyone if len(q["links"]) == 1]
