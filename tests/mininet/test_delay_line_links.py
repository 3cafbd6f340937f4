"""The compiled delay line serves the WAN links of a run from one process
per core, each with a share of them: each link keeps its own delay,
control socket and counters."""

import os
import subprocess

import pytest

from testbed.emulation import measure, network
from testbed.emulation.delay import CompiledRelayDelay
from tests.mininet.helpers import spec_of
from tests.stalls import Run, judge

pytestmark = pytest.mark.mininet

# A triangle of links with three different delays, each the shortest path
# between its ends: a frame that took another link's settings shows in the RTT.
TRIANGLE = """
datacenters: [{name: east, workers: 1}, {name: west, workers: 1}, {name: north, workers: 1}]
wan:
  - {between: [east, west], bw: 20mbit, delay: 5ms}
  - {between: [west, north], bw: 20mbit, delay: 12ms}
  - {between: [east, north], bw: 20mbit, delay: 15ms}
"""


def test_each_compiled_process_delays_each_of_its_links_by_its_own_settings(stolen, request):
    with network.build(spec_of(TRIANGLE), delay_backend="crelay") as net:
        stats = net.backend.stats()
        assert len(stats) == 3
        # Links dealt round-robin over one process per core.
        processes = min(3, os.cpu_count())
        assert len({s["pid"] for s in stats.values()}) == processes
        for i, s in stats.items():
            share = [j for j in range(3) if j % processes == i % processes]
            assert s["links"] == len(share)
            assert all(stats[j]["pid"] == s["pid"] for j in share)
        off = []
        for (a, b), one_way in ((("east", "west"), 0.005), (("west", "north"), 0.012),
                                (("east", "north"), 0.015)):
            rtt = measure.ping_rtt(net, f"{a}-w0", f"{b}-w0", count=10, interval=0.05)
            if abs(rtt - 2 * one_way) > 0.02 * 2 * one_way + 0.0005:
                off.append((a, b, rtt))
        # A live change reaches its own link only.
        net.backend.request(1, {"op": "set", "dir": "ab", "delay": 0.030})
        rtt = measure.ping_rtt(net, "west-w0", "north-w0", count=10, interval=0.05)
        if not 0.041 <= rtt <= 0.046:
            off.append(("west", "north", "changed", rtt))
        rtt = measure.ping_rtt(net, "east-w0", "west-w0", count=10, interval=0.05)
        if abs(rtt - 0.010) > 0.0007:
            off.append(("east", "west", "unchanged", rtt))
        after = net.backend.stats()
        assert [after[i]["dirs"]["ab"]["delay"] for i in range(3)] == [0.005, 0.030, 0.015]
        assert all(after[i]["dirs"][k]["frames"] > 0 for i in range(3) for k in ("ab", "ba"))
    judge(request, "each link's RTT is its own delay", [Run(not off, stolen(), off)])


@pytest.mark.parametrize("argv, says", [
    (["--link", "a=x,b=y"], "control= are required"),
    (["--link", "a=x,b=y,control=/tmp/no.sock,ab-loss=2"], "ab-loss"),
    (["--link", "a=x,b=y,control=/tmp/no.sock,colour=red"], "unknown setting colour"),
    (["--link", "a=x,b=y,control=/tmp/no.sock,seed"], "not name=value"),
    (["--link", "a=x,b=y,control=/tmp/no.sock", "--link", "a=p,b=q,control=/tmp/no2.sock",
      "--ab-delay", "1"], "do not mix"),
    (["--link", "a=x,b=y,control=/tmp/no.sock", "--tick", "0.5"], "--tick must be between"),
    (["--link", "a=x,b=y,control=/tmp/no.sock", "--tick", "soon"], "--tick needs a number"),
])
def test_a_bad_link_option_is_refused_with_exit_2_before_anything_opens(argv, says):
    r = subprocess.run([CompiledRelayDelay().command()[0], *argv], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 2 and says in r.stderr and r.stderr.count("\n") <= 3, r.stderr
    assert not os.path.exists("/tmp/no.sock") and not os.path.exists("/tmp/no2.sock")



PAIR = """
datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
wan: [{between: [east, west], bw: 20mbit, delay: 10ms}]
"""


def test_a_coarser_release_clock_is_reported_and_keeps_the_rtt_centred_on_the_delay():
    # A frame leaves within tick/2 of its deadline, so the median RTT stays
    # at twice the delay however wide the grid.
    tick = 0.002
    with network.build(spec_of(PAIR), backend=CompiledRelayDelay(tick=tick)) as net:
        rtt = measure.ping_rtt(net, "east-w0", "west-w0", count=200, interval=0.01)
        stats = net.backend.stats()[0]
    assert stats["tick"] == tick and stats["wakeups"] > 0
    assert abs(rtt - 0.020) <= 0.02 * 0.020, rtt
