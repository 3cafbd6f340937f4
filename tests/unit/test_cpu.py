import os
import time

import pytest

from testbed.records import cpu


def test_the_load_of_a_run_is_the_mean_busy_share_and_the_share_of_saturated_seconds():
    samples = [{"t": float(t), "busy": b, "stolen": s, "cores": 2}
               for t, (b, s) in enumerate([(0.5, 0.3), (1.0, 0.0), (0.96, 0.02), (0.2, 0.1), (1.0, 0.3)])]
    load = cpu.load_summary(samples, t0=1.0, t1=3.0)           # the seconds the agents ran
    assert load["busy"] == pytest.approx((1.0 + 0.96 + 0.2) / 3)
    assert load["saturated"] == pytest.approx(2 / 3)           # 1.0 and 0.96 are at 95% or more
    assert load["stolen"] == pytest.approx((0.0 + 0.02 + 0.1) / 3)
    assert load["cores"] == 2                                  # the machine that ran it
    assert cpu.load_summary(samples, t0=10.0) is None
    # Samples of a run recorded before stolen time was: not known, not 0.
    assert cpu.load_summary([{"t": 0.0, "busy": 0.5, "cores": 2}])["stolen"] is None


def test_busy_is_what_was_neither_idle_nor_stolen():
    # 2 cores for 10 s: 20 s of core time, 12 idle, 3 stolen, so 5 ran here.
    shares = cpu.shares((100.0, 50.0, 7.0), (110.0, 62.0, 10.0), cores=2)
    assert shares == {"busy": pytest.approx(0.25), "stolen": pytest.approx(0.15)}
    # No time between the readings: nothing measured.
    assert cpu.shares((5.0, 1.0, 1.0), (5.0, 1.0, 1.0), cores=2) == {"busy": 0.0, "stolen": 0.0}
    # Counters that move in whole ticks never make a share leave 0..1.
    assert cpu.shares((0.0, 0.0, 0.0), (1.0, 2.01, 0.0), cores=2)["busy"] == 0.0


def test_a_saturated_run_is_told_so_and_a_calm_one_is_not():
    busy = cpu.describe({"cores": 2, "busy": 0.97, "saturated": 0.8})
    assert busy.startswith("97% of 2 cores busy on average, 80% of the seconds at 95% or more")
    assert "the emulator, not the WAN, may have set the pace" in busy
    calm = cpu.describe({"cores": 2, "busy": 0.4, "saturated": 0.1})
    assert "emulator" not in calm and calm.startswith("40% of 2 cores")
    assert cpu.describe(None) == "-"


def test_a_run_the_hypervisor_held_back_is_told_so():
    stolen = cpu.describe({"cores": 2, "busy": 0.07, "saturated": 0.0, "stolen": 0.10})
    assert stolen.endswith("; 10% taken by the hypervisor: the host, not the WAN, may have set the pace")
    little = cpu.describe({"cores": 2, "busy": 0.4, "saturated": 0.0, "stolen": 0.01})
    assert little.endswith("; 1% taken by the hypervisor")
    unknown = cpu.describe({"cores": 2, "busy": 0.4, "saturated": 0.0, "stolen": None})
    assert "hypervisor" not in unknown


def test_the_meter_sees_a_core_this_process_keeps_busy():
    meter = cpu.CpuMeter()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        pass
    # This loop kept one core of all running, or held back by the host.
    lap = meter.lap()
    assert lap["busy"] + lap["stolen"] >= 0.8 / os.cpu_count(), lap
    assert 0.0 <= lap["stolen"] <= 1.0 - lap["busy"] + 1e-9     # shares of one total: equal up to rounding
    assert 0.0 <= meter.busy() <= 1.0


def test_over_several_machines_the_busiest_machine_is_reported_and_named():
    # a: busy 0.2 and 0.4 (mean 0.3); b: 0.5 and 1.0 (mean 0.75, one second of two saturated).
    samples = [{"t": 1.0, "machine": "a", "busy": 0.2, "cores": 2},
               {"t": 1.0, "machine": "b", "busy": 0.5, "cores": 4},
               {"t": 2.0, "machine": "a", "busy": 0.4, "cores": 2},
               {"t": 2.0, "machine": "b", "busy": 1.0, "cores": 4}]
    load = cpu.busiest_machine(samples)
    assert load == {"cores": 4, "busy": 0.75, "saturated": 0.5, "stolen": None,
                    "machine": "b", "machines": 2}
    assert "on b, the busiest of 2 machines" in cpu.describe(load)
    # Samples of one machine name none: the plain summary.
    assert cpu.busiest_machine([{k: v for k, v in s.items() if k != "machine"} for s in samples[:1]]) \
        == cpu.load_summary(samples[:1])
