import os
import shutil

import pytest


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
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"mininet test: {reason}")
    for item in items:
        if "mininet" in item.keywords:
            item.add_marker(skip)
