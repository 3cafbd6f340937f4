import pytest

from testbed.analysis.stats import BOUND_COLUMNS, bounds_against, describe, group, ratio


def test_describe_gives_median_extremes_and_a_t_interval():
    d = describe([2.0, 4.0, 6.0, None])
    assert (d["n"], d["median"], d["min"], d["max"], d["mean"]) == (3, 4.0, 2.0, 6.0, 4.0)
    # stdev 2, n 3, t(2) = 4.303 -> 4.303 * 2 / sqrt(3)
    assert d["ci95"] == pytest.approx(4.969, abs=1e-3)


def test_a_single_value_has_no_interval_and_nothing_is_nothing():
    assert describe([5.0])["ci95"] is None
    assert describe([None])["n"] == 0


def test_group_keeps_first_seen_order():
    rows = [{"k": 2, "m": 1.0}, {"k": 1, "m": 3.0}, {"k": 2, "m": 3.0}]
    assert [(k, d["median"]) for k, d in group(rows, ["k"], "m")] == [((2,), 2.0), ((1,), 3.0)]


def test_ratio_of_missing_values_is_none():
    assert ratio(3.0, 1.5) == 2.0 and ratio(None, 1.0) is None and ratio(1.0, 0) is None


def test_a_settings_bounds_are_the_medians_over_its_runs_and_the_sync_over_each():
    # ps-scaling at 3 DCs: cut 1.733 s, t_lb 2.264 s, t_opt 2.351 s; a run
    # whose summary has no bounds (no WAN) does not move the medians.
    runs = [{"sync_bound": 1.733, "sync_t_lb": 2.264, "sync_t_opt": 2.351}] * 2 + [{}]
    got = bounds_against(runs, 4.528)
    assert tuple(got) == BOUND_COLUMNS
    assert got == pytest.approx({"bound_s": 1.733, "median_over_bound": 4.528 / 1.733, "t_lb_s": 2.264,
                                 "t_opt_s": 2.351, "median_over_t_lb": 2.0, "t_lb_as_run_s": None,
                                 "median_over_t_lb_as_run": None})
    assert bounds_against([], None) == dict.fromkeys(BOUND_COLUMNS)


def test_runs_whose_links_changed_bring_the_medians_of_their_own_bounds_as_run():
    runs = [{"sync_t_lb": 1.0, "sync_t_lb_as_run": 2.0, "sync_over_t_lb_as_run": 1.5},
            {"sync_t_lb": 1.0, "sync_t_lb_as_run": 4.0, "sync_over_t_lb_as_run": 2.5},
            {"sync_t_lb": 1.0, "sync_t_lb_as_run": 3.0, "sync_over_t_lb_as_run": 1.75}]
    got = bounds_against(runs, 6.0)
    assert got["median_over_t_lb"] == pytest.approx(6.0)         # against the links as configured
    assert got["t_lb_as_run_s"] == pytest.approx(3.0)
    assert got["median_over_t_lb_as_run"] == pytest.approx(1.75)
