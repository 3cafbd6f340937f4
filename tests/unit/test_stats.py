import pytest

from testbed.stats import describe, group, ratio


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
