import os
import shutil

import pytest

from testbed.emulation import measure
from tests import stalls


def _mininet_missing():
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("mnexec", "brctl", "iperf3", "tc"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "needs the mininet Python package"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _mininet_missing()
    for item in items:
        if "mininet" in item.keywords and reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"mininet test: {reason}"))


@pytest.fixture
def stolen():
    """The share of the CPU time the hypervisor took since the test began
    (a Run's `stolen`, tests/stalls.py)."""
    before = measure.cpu_times()
    return lambda: stalls.stolen_since(before)


# Timed checks (tests/stalls.py): each listed as k of n at the end, and a
# session that skipped more of them for a stolen CPU than the budget fails.
TIMED = []


def _worker(config):
    """True in a pytest-xdist worker: its reports reach the controller, which lists them."""
    return hasattr(config, "workerinput")


def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == stalls.PROPERTY:
            TIMED.append((report.nodeid, report.outcome, value))


def pytest_terminal_summary(terminalreporter):
    if not TIMED:
        return
    terminalreporter.section("timed checks")
    for nodeid, outcome, t in TIMED:
        terminalreporter.write_line(f"{outcome:8} {stalls.describe(t['check'], t)}  [{nodeid}]")
    terminalreporter.write_line(over_budget() or f"{len(stalled())} skipped for a stolen CPU; "
                                                  f"the budget is {stalls.stall_budget(len(TIMED))}")


def stalled():
    return [nodeid for nodeid, outcome, t in TIMED if outcome == "skipped" and not t["counted"]]


def over_budget():
    budget = stalls.stall_budget(len(TIMED))
    if len(stalled()) > budget:
        return (f"{len(stalled())} of {len(TIMED)} timed checks were skipped for a stolen CPU, over "
                f"the budget of {budget}: this machine's results say little about the emulation")
    return None


def pytest_sessionfinish(session):
    if not _worker(session.config) and over_budget() and session.exitstatus == 0:
        session.exitstatus = 1
