"""Which machine builds which DC: hand-worked placements of a 3-DC and a
4-DC WAN, the error a user sees, and properties of random WANs (every DC
placed once, no machine over its budget, the cut links exactly those
between machines, the same answer every time, pins kept)."""

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed import spec as S
from testbed.spanning.placement import (
    END_SHARE,
    Machine,
    Placement,
    PlacementError,
    frame_rates,
    machines_needed,
    place,
)
from testbed.spec.topogen import ring_with_chords

# 12112kbit is 1000 full-size frames per second: 12,112,000 / (8 x 1514).
# With 100 us per frame, each end of a direction is charged 50 us per frame,
# so 1000 frames/s through a DC cost it 0.05 cores.
COST = 100e-6

TRIANGLE = """
datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: c, workers: 1}]
wan:
  - {between: [a, b], bw: 24224kbit}
  - {between: [b, c], bw: 12112kbit, reverse: {bw: 24224kbit}}
  - {between: [a, c], bw: 6056kbit}
"""
# Frames/s per link, both directions: a-b 2000 + 2000 = 4000, b-c 1000 +
# 2000 = 3000, a-c 500 + 500 = 1000.  Per DC: a 4000 + 1000 = 5000,
# b 4000 + 3000 = 7000, c 3000 + 1000 = 4000.  Loads at 100 us per frame,
# half to each end: a 0.25, b 0.35, c 0.20 cores; together 0.80.

SQUARE = """
datacenters: [{name: w, workers: 1}, {name: x, workers: 1}, {name: y, workers: 1},
              {name: z, workers: 1}]
wan:
  - {between: [w, x], bw: 18168kbit}
  - {between: [x, y], bw: 6056kbit}
  - {between: [y, z], bw: 18168kbit}
  - {between: [z, w], bw: 6056kbit}
"""
# Frames/s per link: w-x and y-z 1500 + 1500 = 3000, x-y and z-w 500 + 500
# = 1000.  Every DC has one heavy and one light link: 4000 frames/s, 0.20
# cores; together 0.80.


def spec_of(text):
    return S.loads(textwrap.dedent(text))


def one_core(*names):
    return [Machine(name, 1.0) for name in names]


def test_frame_rates_count_each_direction_for_both_its_dcs():
    assert frame_rates(spec_of(TRIANGLE)) == pytest.approx({"a": 5000, "b": 7000, "c": 4000})


def test_frame_rates_take_the_highest_rate_the_dynamics_give_a_direction():
    spec = spec_of("""
        datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: c, workers: 1}]
        wan:
          - {between: [a, b], bw: 12112kbit}
          - {between: [b, c], bw: 12112kbit}
        dynamics:
          - {generator: square, link: [b, a], direction: forward, low: 6056kbit, high: 48448kbit,
             period: 10s}
          - {at: 5s, link: [b, c], bw: 6056kbit}
        """)
    # b -> a may run at 4000 frames/s (the square's high), a -> b stays at
    # 1000; b-c is lowered only, so its 1000 + 1000 hold.
    assert frame_rates(spec) == pytest.approx({"a": 5000, "b": 7000, "c": 2000})


def test_a_dc_without_links_has_no_frames_and_a_group_of_its_own():
    triangle = spec_of(TRIANGLE)
    spec = S.Spec(name="t", datacenters=triangle.datacenters + (S.DataCenter("d", workers=1),),
                  wan=triangle.wan)
    assert frame_rates(spec)["d"] == 0
    # Two machines of 1 core take 0.70 each: as below, {a, b} go to m1 and
    # c to m2; d weighs nothing and goes where most is left, m2.
    assert place(spec, one_core("m1", "m2"), COST).machine_of == {
        "a": "m1", "b": "m1", "c": "m2", "d": "m2"}


def test_the_heaviest_link_stays_inside_a_machine():
    # Budget 0.70 per machine.  Links heaviest first: a-b (4000) merges a
    # and b, 0.25 + 0.35 = 0.60; b-c (3000) would make 0.80, over; a-c
    # (1000) the same.  Groups {a, b} 0.60 and {c} 0.20, heaviest first on
    # the machine with the most left: {a, b} on m1, then c on m2 (0.70
    # left against m1's 0.10).  Cut: b-c and a-c.
    placement = place(spec_of(TRIANGLE), one_core("m1", "m2"), COST)
    assert placement == Placement(machine_of={"a": "m1", "b": "m1", "c": "m2"}, cross=(1, 2),
                                  load=pytest.approx({"m1": 0.60, "m2": 0.20}))


def test_two_heavy_pairs_split_on_their_light_links():
    # Merging w-x (0.40), y-z (0.40); x-y and z-w would make 0.80, over
    # 0.70.  Equal groups: the one with the DC named first goes first, to
    # the first of two machines with as much left.
    placement = place(spec_of(SQUARE), one_core("m1", "m2"), COST)
    assert placement.machine_of == {"w": "m1", "x": "m1", "y": "m2", "z": "m2"}
    assert placement.cross == (1, 3)
    assert placement.load == pytest.approx({"m1": 0.40, "m2": 0.40})


def test_one_machine_takes_everything_that_fits():
    # 1.2 cores at 70% is 0.84, more than the square's 0.80.
    placement = place(spec_of(SQUARE), [Machine("solo", 1.2)], COST)
    assert set(placement.machine_of.values()) == {"solo"}
    assert placement.cross == ()
    assert placement.load == pytest.approx({"solo": 0.80})


def test_pinned_dcs_go_first_and_their_groups_with_them():
    # x on m2 takes w with it (w-x merged): {w, x} on m2, {y, z} on m1.
    placement = place(spec_of(SQUARE), one_core("m1", "m2"), COST, pinned={"x": "m2"})
    assert placement.machine_of == {"w": "m2", "x": "m2", "y": "m1", "z": "m1"}
    # w and x pinned apart: w-x never merges; y-z does (0.40), then x-y
    # brings in x (0.60, pinned to m2); z-w would join m1's w to m2's group.
    placement = place(spec_of(SQUARE), one_core("m1", "m2"), COST, pinned={"w": "m1", "x": "m2"})
    assert placement.machine_of == {"w": "m1", "x": "m2", "y": "m2", "z": "m2"}
    assert placement.cross == (0, 3)
    assert placement.load == pytest.approx({"m1": 0.20, "m2": 0.60})


def test_a_group_too_big_for_the_room_left_is_split_by_the_same_rule():
    # m1 takes 0.70, m2 (0.5 cores) 0.35; c pinned to m1.  Merging: a-b
    # (0.60) free; b-c would put 0.80 on m1, over.  Pinned first: c on m1
    # (0.50 left).  {a, b} 0.60 goes where most is left, m1, but 0.50 is
    # too little: split at 0.50, a-b no longer merges.  b (0.35) on m1
    # (0.15 left), then a (0.25) on m2 (0.35 left).
    placement = place(spec_of(TRIANGLE), [Machine("m1", 1.0), Machine("m2", 0.5)], COST,
                      pinned={"c": "m1"})
    assert placement.machine_of == {"a": "m2", "b": "m1", "c": "m1"}
    assert placement.cross == (0, 2)
    assert placement.load == pytest.approx({"m1": 0.55, "m2": 0.25})


def test_a_dc_heavier_than_any_machine_is_named():
    # At 200 us per frame b needs 7000 x 100 us = 0.70 cores; 0.5 cores at
    # 70% offer 0.35.
    with pytest.raises(PlacementError, match=r"^data center b needs 0\.7 cores of emulation at its "
                                             r"links' rates, more than any machine offers "
                                             r"\(0\.35 of 0\.5 cores at 70%\)$"):
        place(spec_of(TRIANGLE), [Machine("m1", 0.5), Machine("m2", 0.5)], 2 * COST)


def test_a_pinned_dc_too_heavy_for_its_machine_is_named_with_it():
    with pytest.raises(PlacementError, match=r"^data center b, pinned to small, needs 0\.35 cores "
                                             r".* more than small offers \(0\.21 of 0\.3 cores"):
        place(spec_of(TRIANGLE), [Machine("big", 4), Machine("small", 0.3)], COST,
              pinned={"b": "small"})


def test_machines_too_small_together_or_too_full_say_so():
    with pytest.raises(PlacementError, match=r"^the WAN's data centers need 0\.8 cores .* more than "
                                             r"machine m1 offers \(0\.7 of 1 core at 70%\)$"):
        place(spec_of(SQUARE), one_core("m1"), COST)
    # Three DCs of 0.45 cores (a triangle of links of 2250 + 2250 frames/s,
    # 9000 frames/s through each DC), two budgets of 0.70: 1.35 fit
    # together, but no two DCs share a machine.
    spec = spec_of("""
        datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: c, workers: 1}]
        wan:
          - {between: [a, b], bw: 27252kbit}
          - {between: [b, c], bw: 27252kbit}
          - {between: [a, c], bw: 27252kbit}
        """)
    with pytest.raises(PlacementError, match=r"^data center c needs 0\.45 cores .* no machine has "
                                             r"that much left \(the most is 0\.25 cores, on m1\)"):
        place(spec, one_core("m1", "m2"), COST)


@pytest.mark.parametrize("machines, pinned, message", [
    (one_core("m1", "m1"), None, "two machines are named m1"),
    (one_core("m1", "m2"), {"x": "m3"}, "x is pinned to m3, which is not one of the machines (m1, m2)"),
    (one_core("m1", "m2"), {"v": "m1"}, "v is pinned to m1 but is not a data center"),
    ([], None, "no machines"),
    ([Machine("m1", 0)], None, "gives the emulation 0 cores"),
])
def test_wrong_machines_and_pins_are_refused(machines, pinned, message):
    with pytest.raises(PlacementError, match=message.replace("(", r"\(").replace(")", r"\)")):
        place(spec_of(SQUARE), machines, COST, pinned=pinned)


def test_machines_needed_counts_identical_machines():
    # The square's 0.80 cores: one machine of 2 cores (1.40), two of 1
    # core (0.70 each, as above), four of 0.3 (0.21 each, 0.20 per DC).
    square = spec_of(SQUARE)
    assert [machines_needed(square, cores, COST) for cores in (2, 1, 0.3)] == [1, 2, 4]
    with pytest.raises(PlacementError, match="data center w needs 0.2 cores"):
        machines_needed(square, 0.25, COST)


def test_a_ring_of_30_dcs_as_docs_clusters_md_gives_it():
    # 45 links at 20 Mbit/s each way, 1651 frames/s per direction; every DC
    # has three links: 6 x 1651 x 28.1 us / 2 = 0.139 cores, ten to a
    # 2-core machine (1.39 of 1.40).
    ring = S.loads(ring_with_chords(30))
    assert [machines_needed(ring, cores, 28.1e-6) for cores in (2, 8, 32)] == [3, 1, 1]
    assert machines_needed(ring, 2, 28.3e-6) == 4


# ---------------------------------------------------------------- properties


@st.composite
def wans(draw):
    """A hand-built Spec of 2-8 DCs (some possibly without links), random
    links and rates, 1-4 machines and maybe pins."""
    n = draw(st.integers(2, 8))
    names = [f"d{i}" for i in range(n)]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=12, unique=True))
    rate = st.sampled_from([1, 2, 5, 10, 20, 50]).map(lambda mbit: mbit * 1e6)
    wan = tuple(S.WanLink(names[i], names[j], S.Direction(draw(rate), 0.01),
                          S.Direction(draw(rate), 0.01)) for i, j in chosen)
    spec = S.Spec(name="p", datacenters=tuple(S.DataCenter(d, workers=1) for d in names), wan=wan)
    machines = [Machine(f"m{k}", draw(st.sampled_from([0.25, 0.5, 1.0, 2.0])))
                for k in range(draw(st.integers(1, 4)))]
    pinned = draw(st.dictionaries(st.sampled_from(names), st.sampled_from([m.name for m in machines]),
                                  max_size=2))
    return spec, machines, pinned


def loads_of(spec, cost):
    return {dc: frames * cost * END_SHARE for dc, frames in frame_rates(spec).items()}


@settings(max_examples=300, deadline=None)
@given(wans(), st.sampled_from([20e-6, 50e-6, 200e-6]))
def test_a_placement_holds_every_dc_once_within_budgets_and_cuts_exactly_its_cross_links(wan, cost):
    spec, machines, pinned = wan
    try:
        placement = place(spec, machines, cost, pinned=pinned)
    except PlacementError as e:
        assert str(e).startswith(("data center ", "the WAN's")) and "\n" not in str(e)
        return
    assert list(placement.machine_of) == [dc.name for dc in spec.datacenters]
    assert set(placement.machine_of.values()) <= {m.name for m in machines}
    load = loads_of(spec, cost)
    for m in machines:
        on_it = sum(load[dc] for dc, where in placement.machine_of.items() if where == m.name)
        assert placement.load[m.name] == pytest.approx(on_it)
        assert on_it <= m.cores * 0.7 + 1e-9
    assert placement.cross == tuple(i for i, link in enumerate(spec.wan)
                                    if placement.machine_of[link.a] != placement.machine_of[link.b])
    assert all(placement.machine_of[dc] == machine for dc, machine in pinned.items())
    assert place(spec, machines, cost, pinned=pinned) == placement


@settings(max_examples=200, deadline=None)
@given(wans(), st.sampled_from([20e-6, 50e-6, 200e-6]))
def test_machines_needed_is_the_fewest_that_fit(wan, cost):
    spec, machines, _ = wan
    cores = machines[0].cores
    try:
        k = machines_needed(spec, cores, cost)
    except PlacementError:
        assert max(loads_of(spec, cost).values()) > cores * 0.7
        return
    fleet = [Machine(f"m{i + 1}", cores) for i in range(k)]
    place(spec, fleet, cost)
    if k > 1:
        with pytest.raises(PlacementError):
            place(spec, fleet[:-1], cost)


@settings(max_examples=200, deadline=None)
@given(wans(), st.sampled_from([20e-6, 50e-6, 200e-6]))
def test_a_machine_that_holds_the_whole_wan_gets_all_of_it(wan, cost):
    spec, _, _ = wan
    total = sum(loads_of(spec, cost).values())
    placement = place(spec, [Machine("spare", 1.0), Machine("big", total / 0.7 + 1.0)], cost)
    # Every link is inside one group, so none crosses; DCs without links
    # may go to the spare machine.
    assert placement.cross == ()
    linked = {dc for link in spec.wan for dc in (link.a, link.b)}
    assert {placement.machine_of[dc] for dc in linked} == {"big"}
