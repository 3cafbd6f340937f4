"""t_lb on a WAN whose rates change while the synchronization runs: each
link holds the bytes its changing rate carries within its window, checked
by hand, and the bound lies between those of the WAN before and after."""

import random

import pytest

from testbed.bounds import Wan, t_lb
from tests.unit.test_wanbound import C, M, random_wan, star


def two_dcs(delay=0.0):
    return Wan.of_numbers({("a", "b"): (C, delay), ("b", "a"): (C, delay)}, ["a", "b"])


def test_a_link_that_slows_midway_is_held_to_what_it_carried():
    # a->b carries C for 0.5 s, then C/4: 0.5 M + 0.25 M/s x (T - 0.5) = M at T = 2.5 s;
    # the WAN at the start alone says 1 s, the WAN at the end 4 s.
    profile = {("a", "b"): [(0.0, C), (0.5, C / 4)], ("b", "a"): [(0.0, C)]}
    assert t_lb(two_dcs(), M, profile=profile) == pytest.approx(2.5)


def test_a_link_that_speeds_up_midway_is_held_to_what_it_carried():
    # C/4 for 1 s (0.25 M), then C: the other 0.75 M by 1.75 s.
    profile = {("a", "b"): [(0.0, C / 4), (1.0, C)], ("b", "a"): [(0.0, C)]}
    assert t_lb(two_dcs(), M, profile=profile) == pytest.approx(1.75)


def test_a_byte_sent_after_the_window_closes_is_not_counted():
    # 0.1 s one way: a byte sent on a->b after T - 0.1 arrives too late, so
    # 0.5 M + 0.25 M/s x (T - 0.1 - 0.5) = M: T = 2.6 s.
    profile = {("a", "b"): [(0.0, C), (0.5, C / 4)], ("b", "a"): [(0.0, C)]}
    assert t_lb(two_dcs(delay=0.1), M, profile=profile) == pytest.approx(2.6)


def test_a_transit_hub_star_whose_links_halve_midway():
    # Four leaves: every access link carries 1.5 M (2(N-1)/N); C for 0.75 s, then C/2:
    # 0.75 M + 0.5 M/s x (T - 0.75) = 1.5 M at T = 2.25 s (1.5 s before, 3 s after).
    wan = star(4)
    profile = {link: [(0.0, C), (0.75, C / 2)] for link in wan.links}
    assert t_lb(wan, M, profile=profile) == pytest.approx(2.25)


@pytest.mark.parametrize("seed", range(10))
def test_a_slowdown_lies_between_the_wans_before_and_after_and_after_the_bound_changes_nothing(seed):
    rng = random.Random(3000 + seed)
    before = random_wan(rng, rng.randint(2, 5), rng.randint(0, 2))
    factor = {link: rng.choice([0.25, 0.5, 1.0]) for link in before.links}
    slowed_links = {link: (rate * factor[link], delay) for link, (rate, delay) in before.links.items()}
    after = Wan.of_numbers(slowed_links, before.agents)
    first, last = t_lb(before, M), t_lb(after, M)

    def slowed(at):
        return {link: [(0.0, rate), (at, rate * factor[link])] for link, (rate, _) in before.links.items()}

    unchanged = {link: [(0.0, rate)] for link, (rate, _) in before.links.items()}
    assert t_lb(before, M, profile=unchanged) == pytest.approx(first, rel=1e-9)
    midway = t_lb(before, M, profile=slowed(first / 2))
    assert first * (1 - 1e-7) <= midway <= last * (1 + 1e-7)
    assert t_lb(before, M, profile=slowed(first)) == pytest.approx(first, rel=1e-7)


def test_a_change_just_after_the_start_takes_its_rate_whatever_the_rounding():
    # 0.02 s one way, the fall at 0.01 s: the break is at 0.01 + 0.02 s, which
    # less 0.02 s falls a hair short of 0.01 in floating point.  The window of
    # a->b ends at T - 0.02: 0.01 M + 0.25 M/s x (T - 0.03) = M at T = 3.99 s.
    profile = {("a", "b"): [(0.0, C), (0.01, C / 4)], ("b", "a"): [(0.0, C)]}
    assert t_lb(two_dcs(delay=0.02), M, profile=profile) == pytest.approx(3.99)
