"""How a timed check is judged (tests/stalls.py): a fixed number of runs,
none retried; it passes when enough of the runs the hypervisor left alone
held, fails when fewer did, is skipped only when none could be counted,
and is recorded as k of n either way."""

import types

import pytest

from tests.stalls import Run, describe, judge, tally


def outcome(runs, need=1.0):
    """What judge() makes of a check: ("passed" | "failed" | "skipped", message, recorded)."""
    request = types.SimpleNamespace(node=types.SimpleNamespace(user_properties=[]))
    try:
        judge(request, "within 5%", runs, need)
    except AssertionError as e:
        return "failed", str(e), request.node.user_properties
    except pytest.skip.Exception as e:
        return "skipped", str(e), request.node.user_properties
    return "passed", "", request.node.user_properties


def test_a_check_passes_when_every_counted_run_held_and_says_k_of_n():
    kind, _, recorded = outcome([Run(True, 0.0), Run(True, 0.01), Run(True, 0.2)])
    assert kind == "passed"
    assert recorded == [("timed", {"check": "within 5%", "passed": 2, "counted": 2, "stalled": 1,
                                   "need": 2})]
    assert describe("within 5%", recorded[0][1]) == \
        "within 5%: 2 of 2 runs held (100%), 1 more stalled, 2 needed"


def test_one_counted_run_that_did_not_hold_fails_however_many_did():
    kind, message, recorded = outcome([Run(True, 0.0), Run(False, 0.01, "0.91 of the rate"),
                                       Run(True, 0.0)])
    assert kind == "failed" and recorded[0][1]["passed"] == 2
    assert message.startswith("within 5%: 2 of 3 runs held (67%), 3 needed; the runs that did not: "
                              "['0.91 of the rate']")


def test_a_stated_share_is_the_claim_and_nothing_picks_the_best_run():
    assert outcome([Run(True, 0.0), Run(False, 0.0), Run(True, 0.0)], need=2 / 3)[0] == "passed"
    assert outcome([Run(False, 0.0), Run(False, 0.0), Run(True, 0.0)], need=2 / 3)[0] == "failed"
    assert tally([Run(True, 0.0)] * 5, need=0.5)["need"] == 3


def test_a_run_the_hypervisor_stalled_is_not_counted_either_way():
    # Held or not, a stalled run says little: it neither passes nor fails a check.
    assert outcome([Run(False, 0.3), Run(True, 0.0)])[0] == "passed"
    assert outcome([Run(True, 0.3), Run(False, 0.0)])[0] == "failed"


def test_a_check_whose_every_run_stalled_is_skipped_with_the_shares_and_recorded():
    kind, message, recorded = outcome([Run(False, 0.2, "off by 20%"), Run(True, 0.235)])
    assert kind == "skipped" and recorded[0][1]["counted"] == 0
    assert message.startswith("stolen CPU: the hypervisor took 20.0%, 23.5% of the CPU time, over 5% "
                              "in every run, so 'within 5%' was not judged: ['off by 20%'")


STALLED_CHECKS = """
import pytest
from tests.stalls import Run, judge

@pytest.mark.parametrize("k", range({n}))
def test_stalled(request, k):
    judge(request, "within 5%", [Run(True, 0.5)])

@pytest.mark.parametrize("k", range({counted}))
def test_counted(request, k):
    judge(request, "within 6%", [Run(True, 0.0)])
"""


def test_the_budget_is_two_skips_or_a_quarter_of_the_checks_whichever_is_more():
    from tests.stalls import stall_budget
    assert [stall_budget(n) for n in (0, 3, 8, 11, 12, 20, 28)] == [2, 2, 2, 2, 3, 5, 7]


@pytest.mark.parametrize("stalled,counted,code", [(2, 0, 0), (3, 0, 1), (5, 15, 0), (6, 14, 1)])
def test_a_session_that_skips_more_timed_checks_for_a_stolen_cpu_than_the_budget_fails(
        tmp_path, stalled, counted, code):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    (tmp_path / "test_inner.py").write_text(STALLED_CHECKS.format(n=stalled, counted=counted))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
                        "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_inner.py")],
                       cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == code, r.stdout[-2000:]
    assert f"skipped  within 5%: 0 of 0 runs held, 1 more stalled, 0 needed" in r.stdout
    budget = max(2, (stalled + counted) // 4)
    if code:
        assert (f"{stalled} of {stalled + counted} timed checks were skipped for a stolen CPU, over the "
                f"budget of {budget}: this machine's results say little about the emulation") in r.stdout
    else:
        assert f"{stalled} skipped for a stolen CPU; the budget is {budget}" in r.stdout
