import os
import time

import pytest

from testbed import cpu


def test_the_load_of_a_run_is_the_mean_busy_share_and_the_share_of_saturated_seconds():
    samples = [{"t": float(t), "busy": b, "cores": 2} for t, b in enumerate([0.5, 1.0, 0.96, 0.2, 1.0])]
    load = cpu.load_summary(samples, t0=1.0, t1=3.0)           # the seconds the agents ran
    assert load["busy"] == pytest.approx((1.0 + 0.96 + 0.2) / 3)
    assert load["saturated"] == pytest.approx(2 / 3)           # 1.0 and 0.96 are at 95% or more
    assert load["cores"] == 2                                  # the machine that ran it
    assert cpu.load_summary(samples, t0=10.0) is None


def test_a_saturated_run_is_told_so_and_a_calm_one_is_not():
    busy = cpu.describe({"cores": 2, "busy": 0.97, "saturated": 0.8})
    assert busy.startswith("97% of 2 cores busy on average, 80% of the seconds at 95% or more")
    assert "the emulator, not the WAN, may have set the pace" in busy
    calm = cpu.describe({"cores": 2, "busy": 0.4, "saturated": 0.1})
    assert "emulator" not in calm and calm.startswith("40% of 2 cores")
    assert cpu.describe(None) == "-"


def test_the_meter_sees_a_core_this_process_keeps_busy():
    meter = cpu.CpuMeter()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        pass
    # The machine was at least as busy as this loop: one core of all.
    assert meter.lap() >= 0.8 / os.cpu_count()
    assert 0.0 <= meter.busy() <= 1.0
