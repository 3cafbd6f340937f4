"""Time to accuracy on hand-made curves."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.analysis.accuracy import points_of, smoothed, time_to_accuracy


def test_the_crossing_is_interpolated_between_the_evaluations_around_it():
    # Medians of 3: 0.5, 0.6, 0.7, 0.8, 0.9 at t = 0..40; 0.85 is reached between
    # t = 30 (0.8) and t = 40 (0.9), halfway: 35.
    points = [(0, 0.5), (10, 0.7), (20, 0.6), (30, 0.9), (40, 0.95)]
    assert [a for _, a in smoothed(points)] == [0.5, 0.6, 0.6, 0.7, 0.9]
    assert time_to_accuracy(points, 0.85) == pytest.approx(30 + (0.85 - 0.7) / 0.2 * 10)
    assert time_to_accuracy(points, 0.99) is None


def test_one_lucky_evaluation_is_not_a_crossing():
    points = [(0, 0.5), (10, 0.95), (20, 0.5), (30, 0.5)]
    assert time_to_accuracy(points, 0.9) is None
    assert time_to_accuracy(points, 0.9, window=1) == pytest.approx(0 + 0.4 / 0.45 * 10)


def test_an_evaluation_is_placed_at_the_time_its_model_was_taken():
    evals = [{"t": 12.0, "accuracy": 0.5, "at": 10.0}, {"t": 25.0, "accuracy": 0.6}]
    assert points_of(evals, start=5.0) == [(5.0, 0.5), (20.0, 0.6)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0.05, 0.95))
def test_the_time_found_lies_where_the_smoothed_curve_crosses(accuracies, target):
    points = [(10.0 * i, a) for i, a in enumerate(accuracies)]
    t = time_to_accuracy(points, target)
    curve = smoothed(points)
    if t is None:
        assert all(a < target for _, a in curve)
        return
    first = next(i for i, (_, a) in enumerate(curve) if a >= target)
    assert all(a < target for _, a in curve[:first])
    low = curve[first - 1][0] if first else curve[0][0]
    assert low <= t <= curve[first][0]
