"""How a timing test is judged when the hypervisor took the CPUs
(tests/stalls.py): it passes on a good measurement, fails on a bad one
from any run the host left alone, and is skipped, never passed, only
when every run was stalled."""

import pytest

from tests import stalls
from tests.stalls import judged


def outcome(ok, shares, detail="off by 20%"):
    """What judged() makes of a test: ("passed" | "failed" | "skipped", message)."""
    try:
        judged(ok, shares, detail)
    except AssertionError as e:
        return "failed", str(e)
    except pytest.skip.Exception as e:
        return "skipped", str(e)
    return "passed", ""


def test_a_good_measurement_passes_whatever_the_host_took():
    assert outcome(True, [0.3, 0.4]) == ("passed", "")
    assert outcome(True, []) == ("passed", "")


def test_a_bad_measurement_fails_if_any_run_kept_its_cpu():
    assert outcome(False, [0.3, 0.05]) == (
        "failed", "off by 20% (the hypervisor took 30.0%, 5.0% of the CPU time per run)")
    assert outcome(False, [0.0]) == (
        "failed", "off by 20% (the hypervisor took 0.0% of the CPU time per run)")
    assert outcome(False, [], "no run at all") == ("failed", "no run at all")


def test_a_bad_measurement_from_stalled_runs_only_is_skipped_with_the_shares():
    kind, message = outcome(False, [0.2, 0.235])
    assert kind == "skipped"
    assert "took 20.0%, 23.5% of the CPU time in every run" in message and message.endswith("off by 20%")


def test_stalled_runs_are_retried_and_do_not_count_as_attempts(monkeypatch):
    shares = iter([0.2, 0.01, 0.3, 0.02, 0.0])
    monkeypatch.setattr(stalls.measure, "stolen_share", lambda before, after: next(shares))
    results = iter([0.7, 0.8, 0.9, 0.6, 0.5])
    runs, taken = stalls.unstalled(lambda: next(results), lambda r: r >= 1, attempts=2, patience=60)
    # Runs 1 and 3 stalled, runs 2 and 4 counted: two attempts, then it stops.
    assert runs == [0.7, 0.8, 0.9, 0.6] and taken == [0.2, 0.01, 0.3, 0.02]
