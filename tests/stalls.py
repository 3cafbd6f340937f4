"""Timing measurements that the hypervisor may have stalled."""

import itertools
import time

import pytest

from testbed.emulation import measure
from testbed.records import cpu

SKIP_DETAIL = 300          # characters of a skipped measurement's detail in its reason


def stolen_since(before):
    """The share of the CPU time the hypervisor took since the reading
    `before` (measure.cpu_times()), to a tenth of a percent."""
    return round(measure.stolen_share(before, measure.cpu_times()), 3)


def unstalled(measure_once, good, attempts=3, patience=45.0, stolen=cpu.STOLEN_WARN):
    """Run measure_once() until good(result), or until `attempts` runs
    have failed with no more than `stolen` of the CPU time taken by the
    hypervisor (measure.stolen_share: nothing forwards meanwhile, so such
    a run says little about the emulation), or `patience` seconds.
    Returns ([results], [stolen share of each run])."""
    results, shares, counted = [], [], 0
    deadline = time.monotonic() + patience
    while counted < attempts and time.monotonic() < deadline:
        before = measure.cpu_times()
        results.append(measure_once())
        shares.append(stolen_since(before))
        if good(results[-1]):
            break
        counted += shares[-1] <= stolen
    return results, shares


def judged(ok, shares, detail, stolen=cpu.STOLEN_WARN):
    """Pass if `ok`.  Otherwise fail with `detail` and the shares, unless every run lost
    more than `stolen` of the CPU time to the hypervisor (`shares`, one per
    run): then no run measured the emulation, only the host, so the test
    is skipped with the shares and what was off as its reason, which
    `pytest -ra` prints.  Whatever a test asserts beyond timing, it
    asserts before this."""
    if ok:
        return
    took = ", ".join(f"{s:.1%}" for s in shares)
    if shares and min(shares) > stolen:
        pytest.skip(f"the hypervisor took {took} of the CPU time "
                    f"in every run (a run counts with at most {stolen:.0%}), so this was not judged: "
                    f"{str(detail)[:SKIP_DETAIL]}")
    raise AssertionError(f"{detail} (the hypervisor took {took} of the CPU time per run)" if shares
                         else detail)


def fresh_folders(parent):
    """A new empty folder under `parent` for each run of a retried
    measurement that writes files: try0, try1, ..."""
    for i in itertools.count():
        folder = parent / f"try{i}"
        folder.mkdir()
        yield folder
