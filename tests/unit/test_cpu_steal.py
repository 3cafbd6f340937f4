"""The share of CPU time the hypervisor stole between two readings
(testbed.emulation.measure), which the rate tests use to tell a stalled
machine from a wrongly shaped link."""

from testbed.emulation.measure import cpu_times, stolen_share


def test_the_share_is_the_stolen_jiffies_over_all_jiffies_between_the_readings():
    assert stolen_share((10, 1000), (30, 1200)) == 0.1
    assert stolen_share((10, 1000), (10, 1500)) == 0.0
    # Two readings in the same jiffy: nothing was measured, nothing stolen.
    assert stolen_share((10, 1000), (10, 1000)) == 0.0


def test_this_machines_counters_read_as_stolen_within_total_and_never_go_back():
    first = cpu_times()
    sum(range(200_000))
    second = cpu_times()
    assert 0 <= first[0] <= first[1] and second[0] >= first[0] and second[1] >= first[1]
    assert 0.0 <= stolen_share(first, second) <= 1.0
