"""A LAN link is shaped at both ends: lan.bw bounds what a node receives as
well as what it sends, however many senders it has (the big-switch model
of a cluster, where every host port has an ingress and an egress capacity)."""

import re
import time

import pytest

from testbed.emulation import measure, network
from testbed.spec.units import parse_rate
from tests.mininet.helpers import spec_of
from agents.planning.wan import GOODPUT_SHARE

pytestmark = pytest.mark.mininet

LAN_RATE = 20e6
# A spec needs two DCs; the traffic measured stays inside `a`.
SPEC = """
datacenters: [{name: a, servers: 1, workers: 2}, {name: b, workers: 1}]
wan: [{between: [a, b], bw: 20mbit, delay: 5ms}]
lan: {bw: 20mbit}
"""


@pytest.fixture(scope="module")
def cluster():
    with network.build(spec_of(SPEC)) as net:
        yield net


def expected_goodput():
    return LAN_RATE * GOODPUT_SHARE


def test_two_workers_sending_to_the_server_at_once_get_its_nic_rate_in_total_not_twice(cluster):
    # The server's received frames over one window while both flows run:
    # TCP's acknowledged-byte counts of two competing flows swing by a few
    # percent with the out-of-order data of their losses, the wire does not.
    server = next(h for h in cluster.plan.hosts if h.name == "a-s0")
    flows = [("a-w0", "a-s0", 5201), ("a-w1", "a-s0", 5202)]
    with measure.iperf3_flows(cluster, flows, seconds=8):
        time.sleep(2)
        b0, t0 = measure.rx_bytes(cluster, "a-s0", server.intf), time.monotonic()
        time.sleep(5)
        b1, t1 = measure.rx_bytes(cluster, "a-s0", server.intf), time.monotonic()
    received = (b1 - b0) * 8 / (t1 - t0)
    assert abs(received / LAN_RATE - 1) <= 0.02, received


def test_one_worker_alone_gets_the_servers_whole_nic_rate(cluster):
    goodput, _ = measure.iperf3(cluster, "a-w0", "a-s0", seconds=4)
    assert abs(goodput / expected_goodput() - 1) <= 0.05, goodput


def lan_shaper(node, dev):
    """(HTB rate in bit/s, leaf qdisc line) on one end of a LAN link."""
    rate = re.search(r"class htb 1:1 .*? rate (\S+)",
                     network.run_in(node, ["tc", "class", "show", "dev", dev]))
    leaf = [line for line in network.run_in(node, ["tc", "qdisc", "show", "dev", dev]).splitlines()
            if "parent 1:1" in line]
    assert rate and len(leaf) == 1, (node.name, dev)
    return parse_rate(rate.group(1)), leaf[0].strip().removeprefix("qdisc ")


def test_every_bridge_port_toward_a_node_has_the_nodes_own_rate_and_queue_and_keeps_them(cluster):
    def shapers():
        found = {}
        switch_of = dict(cluster.plan.switches)
        for h in cluster.plan.hosts:
            found[h.name] = (lan_shaper(cluster.net[h.node], h.intf),
                             lan_shaper(cluster.net[switch_of[h.dc]], h.switch_port))
        return found

    before = shapers()
    assert {h.role for h in cluster.plan.hosts} == {"router", "server", "worker"}
    for name, (node_end, switch_end) in before.items():
        assert switch_end == node_end, name
        assert switch_end[0] == LAN_RATE, name
        # No delay of its own: the sender's egress adds the LAN delay once.
        assert switch_end[1].startswith("bfifo"), (name, switch_end)
    # Live changes are for WAN links; the LAN stays as built.
    cluster.change_link("a", "b", rate=5e6)
    assert shapers() == before
