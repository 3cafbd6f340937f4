"""`coordination: management`: the coordinator's traffic takes an unshaped
network of its own, everything else keeps the shaped, delayed WAN."""

import re

import pytest

from testbed.emulation import network, state
from testbed.emulation.network import run_in
from tests.mininet.helpers import spec_of

pytestmark = pytest.mark.mininet


def rtt(node, ip, source=None):
    args = ["ping", "-n", "-c", "5", "-i", "0.2", "-W", "5"] + (["-I", source] if source else [])
    run_in(node, args[:2] + ["-c", "1"] + args[4:] + [ip], check=False)   # warm ARP
    out = run_in(node, args + [ip], check=False)
    times = sorted(float(t) for t in re.findall(r"time=([\d.]+) ms", out))
    assert times, out
    return times[len(times) // 2] / 1e3


def test_the_management_address_bypasses_the_wan_and_the_rest_does_not():
    spec = spec_of("""
    datacenters: [{name: east, workers: 1, servers: 1}, {name: mid, workers: 1},
                  {name: west, workers: 1}]
    wan:
      - {between: [east, mid], bw: 20mbit, delay: 40ms}
      - {between: [mid, west], bw: 20mbit, delay: 40ms}
    experiment: {server_dc: east, coordination: management, workload: synthetic,
                 model: flat-1000}
    """)
    with network.build(spec) as net:
        router = net.node("east-r")
        port = net.plan.management.port("east")
        far = net.ip("west-w0")
        # From the management address: no WAN delay, two hops of a LAN.
        assert rtt(router, far, source=port.ip) < 0.02
        # From the router's LAN address: the WAN's 2 x (40 + 40) ms.
        assert rtt(router, far, source=net.plan.router("east").ip) >= 0.15
        # A worker reaches the management address directly, and back.
        assert rtt(net.node("west-w0"), port.ip) < 0.02


def test_a_run_id_of_letters_only_still_builds_the_management_switch(monkeypatch):
    # Mininet takes a switch's datapath ID from the first number in its
    # name; the management switch is named after the run ID alone.
    monkeypatch.setattr(state, "new_run_id", lambda: "beef")
    spec = spec_of("""
    datacenters: [{name: east, workers: 1, servers: 1}, {name: west, workers: 1}]
    wan: [{between: [east, west], bw: 20mbit, delay: 5ms}]
    experiment: {server_dc: east, coordination: management, workload: synthetic,
                 model: flat-1000}
    """)
    with network.build(spec) as net:
        assert net.plan.management.switch == "tbbeefm"
        port = net.plan.management.port("east")
        assert rtt(net.node("west-w0"), port.ip) < 0.02
