"""Timed checks, judged as they are: a test measures a fixed number of runs
and says how many must hold; nothing is retried or rerun, and no run is
picked as the best.

A run during which the hypervisor took more than STOLEN of the CPU time
(measure.stolen_share: nothing here runs meanwhile, not the shapers, not
the delay line, not TCP) says little about the emulation: it is not
counted.  A check passes when at least `need` of its counted runs held,
fails when fewer did, and is skipped only when no run could be counted.
Every check is recorded as "k of n" with its pass rate, and the session
lists them all (tests/conftest.py); a session fails when more of its checks
were skipped for a stolen CPU than its budget, STALL_BUDGET or
STALL_SHARE of the checks it judged, whichever is more, so a machine that
steals too much is noticed rather than passed.
"""

import math
from dataclasses import dataclass

import pytest

from testbed.emulation import measure
from testbed.records import cpu

STOLEN = cpu.STOLEN_WARN
SKIP_DETAIL = 300          # characters of a skipped check's detail in its reason
PROPERTY = "timed"         # the user property a check is recorded under
STALL_BUDGET = 2           # timed checks a session may skip for a stolen CPU, at least
STALL_SHARE = 0.25         # and this share of its timed checks, where that is more


def stall_budget(checks):
    """How many of a session's `checks` timed checks may be skipped for a
    stolen CPU before the session fails."""
    return max(STALL_BUDGET, math.floor(STALL_SHARE * checks))


def stolen_since(before):
    """The share of the CPU time the hypervisor took since the reading
    `before` (measure.cpu_times()), to a tenth of a percent."""
    return round(measure.stolen_share(before, measure.cpu_times()), 3)


@dataclass(frozen=True)
class Run:
    held: bool          # what the check claims held in this run
    stolen: float       # the share of the CPU time the hypervisor took meanwhile
    detail: object = None


def measured(measure_once, held):
    """One run of a measurement: Run(held(result), stolen share, result)."""
    before = measure.cpu_times()
    result = measure_once()
    return Run(bool(held(result)), stolen_since(before), result)


def tally(runs, need=1.0):
    """{passed, counted, stalled, need}: how a check's runs went; `need` is
    the share of the counted runs that must hold (1.0: all)."""
    counted = [r for r in runs if r.stolen <= STOLEN]
    return {"passed": sum(r.held for r in counted), "counted": len(counted),
            "stalled": len(runs) - len(counted),
            "need": math.ceil(need * len(counted) - 1e-9) if counted else 0}


def describe(check, t):
    """'iperf3 ... : 5 of 6 runs held (83%), 1 more stalled'."""
    rate = f" ({t['passed'] / t['counted']:.0%})" if t["counted"] else ""
    stalled = f", {t['stalled']} more stalled" if t["stalled"] else ""
    return f"{check}: {t['passed']} of {t['counted']} runs held{rate}{stalled}, {t['need']} needed"


def judge(request, check, runs, need=1.0):
    """Pass, fail or skip the test `request` runs on its timed check: `check`
    says what holds in a run, `runs` are its Runs.  Recorded for the
    session's list either way.  Whatever a test asserts beyond timing, it
    asserts before this."""
    t = tally(runs, need)
    request.node.user_properties.append((PROPERTY, {"check": check, **t}))
    shares = ", ".join(f"{r.stolen:.1%}" for r in runs)
    details = [r.detail for r in runs if not r.held or r.stolen > STOLEN]
    if not t["counted"]:
        pytest.skip(f"stolen CPU: the hypervisor took {shares} of the CPU time, over {STOLEN:.0%} "
                    f"in every run, so {check!r} was not judged: {str(details)[:SKIP_DETAIL]}")
    if t["passed"] < t["need"]:
        raise AssertionError(f"{describe(check, t)}; the runs that did not: {details} "
                             f"(the hypervisor took {shares} of the CPU time per run)")
