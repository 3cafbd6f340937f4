"""How a timing test is judged when the hypervisor took the CPUs
(tests/stalls.py): it passes on a good measurement, fails on a bad one
from any run the host left alone, and is skipped, never passed, only
when every run was stalled."""

import pytest

from tests import stalls
from tests.stalls import judged


def test_a_good_measurement_passes_whatever_the_host_took():
    judged(True, [0.3, 0.4], "never shown")


def test_a_bad_measurement_fails_if_any_run_kept_its_cpu():
    with pytest.raises(AssertionError, match="off by 20%"):
        judged(False, [0.3, 0.05], "off by 20%")
    with pytest.raises(AssertionError):
        judged(False, [], "no run at all")


def test_a_bad_measurement_from_stalled_runs_only_is_skipped_with_the_shares():
    with pytest.raises(pytest.skip.Exception, match="took 20.0%, 23.5% of the CPU time in every run.*not judged: off by 20%"):
        judged(False, [0.2, 0.235], "off by 20%")


def test_stalled_runs_are_retried_and_do_not_count_as_attempts(monkeypatch):
    shares = iter([0.2, 0.01, 0.3, 0.02, 0.0])
    monkeypatch.setattr(stalls.measure, "stolen_share", lambda before, after: next(shares))
    results = iter([0.7, 0.8, 0.9, 0.6, 0.5])
    runs, taken = stalls.unstalled(lambda: next(results), lambda r: r >= 1, attempts=2, patience=60)
    # Runs 1 and 3 stalled, runs 2 and 4 counted: two attempts, then it stops.
    assert runs == [0.7, 0.8, 0.9, 0.6] and taken == [0.2, 0.01, 0.3, 0.02]
