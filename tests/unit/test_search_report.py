"""How a search run's pacing is judged, on hand-built numbers: the
receiver's goodput estimate and which flows are timed."""

import pytest

from agents.roles.machine import _Incoming
from testbed.analysis.search_report import MIN_CHUNKS, pacing


def test_the_receivers_goodput_is_the_slope_of_bytes_against_arrival_times():
    inc = _Incoming(4, 0.0)
    for t in (0.0, 1.0, 2.0, 3.0):
        inc.take(10, t)
    assert inc.rate() == pytest.approx(10.0)
    # 16 chunks of 10 bytes a second apart, the first one a second late (it
    # arrives with the second): (bytes - first) / span says 150 / 14 = 10.71,
    # 7% fast; the slope says 10.20, 2%.
    late = _Incoming(16, 1.0)
    for t in [1.0] + [float(i) for i in range(1, 16)]:
        late.take(10, t)
    assert late.rate() == pytest.approx(10.2013, abs=1e-4)
    assert _Incoming(2, 0.0).rate() is None


def flow(**kw):
    base = {"paced": True, "gated": False, "rates": [100.0], "bytes": MIN_CHUNKS * 10,
            "goodput": 98.0}
    return {**base, **kw}


def test_only_paced_ungated_long_flows_that_kept_one_rate_are_timed():
    flows = [flow(), flow(goodput=105.0),
             flow(paced=False), flow(gated=True), flow(rates=[100.0, 50.0]),
             flow(rates=[0.0]), flow(bytes=(MIN_CHUNKS - 1) * 10), flow(goodput=None)]
    assert pacing(flows, 10) == [pytest.approx(0.98), pytest.approx(1.05)]
