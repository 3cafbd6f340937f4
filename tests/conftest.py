import os
import shutil

import pytest

from testbed.emulation import measure
from tests.stalls import stolen_since


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


# A Mininet test measures a real network that shares two cores with
# everything else on the machine: a second CI process or a busy kernel can
# hold a ping reply or an iperf3 second long enough to miss a 2% bound.  So
# a failed Mininet test runs once more before it counts; a broken feature
# fails both times, and pytest lists every rerun in its summary.
MININET_RERUNS = 1


def pytest_collection_modifyitems(config, items):
    reason = _mininet_missing()
    for item in items:
        if "mininet" not in item.keywords:
            continue
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"mininet test: {reason}"))
        elif item.get_closest_marker("flaky") is None:
            item.add_marker(pytest.mark.flaky(reruns=MININET_RERUNS))


@pytest.fixture
def stolen():
    """The share of the CPU time the hypervisor took since the test began,
    as a list of one run's share for tests/stalls.py's judged()."""
    before = measure.cpu_times()
    return lambda: [stolen_since(before)]
