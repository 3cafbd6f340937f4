"""Time to accuracy, measured the same way for every system: the test
accuracy over time, smoothed by a running median of `window` evaluations
(one lucky evaluation does not count as reaching a target), and the time
at which the smoothed curve first reaches the target, interpolated
linearly between the two evaluations around the crossing (so the answer
is not quantized to the evaluation period).  Every recipe that reports a
time to accuracy uses `time_to_accuracy`."""

import statistics

from testbed.analysis.stats import describe, spread

WINDOW = 3


def smoothed(points, window=WINDOW):
    """[(t, running median of the last `window` accuracies)] of time-sorted
    (t, accuracy) points; the first points take the median of what there is."""
    out = []
    for i, (t, _) in enumerate(points):
        recent = [a for _, a in points[max(0, i - window + 1):i + 1]]
        out.append((t, statistics.median(recent)))
    return out


def time_to_accuracy(points, target, window=WINDOW):
    """Seconds at which the smoothed accuracy of `points` ([(t, accuracy)])
    first reaches `target`, interpolated; None if it never does."""
    curve = smoothed(sorted(points), window)
    for i, (t, a) in enumerate(curve):
        if a >= target:
            if i == 0:
                return t
            t0, a0 = curve[i - 1]
            return t0 + (target - a0) / (a - a0) * (t - t0)
    return None


def points_of(evaluations, start):
    """[(seconds since `start`, accuracy)] of `eval` events: each at the
    time its model was taken (`at`, evaluations on wall time), or else the
    time it was logged."""
    return sorted((e.get("at", e["t"]) - start, e["accuracy"]) for e in evaluations)


def tta_columns(runs, key):
    """A table's columns for one level over a setting's runs ({key: seconds
    or None} each): KEY_median_s, KEY_min_s and KEY_max_s over the runs
    that reached it, and KEY_reached, how many of how many did."""
    tta = describe([r[key] for r in runs])
    return {**spread(key, tta, "_s"), f"{key}_reached": f"{tta['n']}/{len(runs)}"}
