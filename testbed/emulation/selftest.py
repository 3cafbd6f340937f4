"""`testbed selftest [FILE]`: build a network and check that every WAN link
delivers what it was configured to deliver.

Per link, RTT must be within 10% (or 2 ms) of the sum of both one-way
delays; per direction, TCP goodput within 5% of the wire rate times the TCP
payload share of a frame.  Where the delay line is in use, its CPU share
while the direction runs at full rate is reported too: the CPU of the
process that serves the link, which for the compiled delay line is one
process serving a share of the links (the others idle meanwhile).
"""

import time
from dataclasses import dataclass

from agents.planning.wan import GOODPUT_SHARE
from testbed import spec as specmod
from testbed.emulation import measure, network

DEFAULT_TOPOLOGY = """
name: selftest
datacenters:
  - {name: east, workers: 1}
  - {name: west, workers: 1}
wan:
  - between: [east, west]
    bw: 20mbit
    delay: 20ms
    reverse: {bw: 10mbit}
"""
RTT_TOLERANCE = 0.10
RTT_FLOOR = 0.002
RATE_TOLERANCE = 0.05


@dataclass
class Result:
    what: str
    unit: str            # "s" or "bit/s"
    expected: float
    measured: float
    tolerance: float
    relay_cpu: float = None   # the delay line process's share of one core, while measuring

    @property
    def ratio(self):
        return self.measured / self.expected

    @property
    def ok(self):
        return abs(self.measured - self.expected) <= self.tolerance


def rtt_result(what, expected, measured):
    return Result(what, "s", expected, measured, max(RTT_TOLERANCE * expected, RTT_FLOOR))


def rate_result(what, wire_rate, goodput, relay_cpu=None):
    expected = wire_rate * GOODPUT_SHARE
    return Result(what, "bit/s", expected, goodput, RATE_TOLERANCE * expected, relay_cpu)


def default_spec():
    return specmod.loads(DEFAULT_TOPOLOGY, source="<selftest>")


def endpoint(net, dc):
    """A host to measure from in a DC: its first agent host, or its router."""
    hosts = net.spec.dc(dc).hosts
    return hosts[0] if hosts else f"{dc}-r"


def _relay_cpu(net, index):
    if not net.backend.uses_relays:
        return None
    return net.backend.request(index, {"op": "stats"})["cpu_s"]


def measure_links(net, seconds=5.0, progress=lambda text: None):
    """[Result] for every WAN link (RTT) and direction (goodput)."""
    results = []
    for index, link in enumerate(net.spec.wan):
        a, b = endpoint(net, link.a), endpoint(net, link.b)
        progress(f"RTT {link.name}")
        results.append(rtt_result(f"RTT {link.a} <-> {link.b}", link.ab.delay + link.ba.delay,
                                  measure.ping_rtt(net, a, b)))
        for src, dst, d in ((a, b, link.ab), (b, a, link.ba)):
            progress(f"goodput {src} -> {dst}")
            cpu0, t0 = _relay_cpu(net, index), time.monotonic()
            bps, _ = measure.iperf3(net, src, dst, seconds=seconds)
            cpu1, t1 = _relay_cpu(net, index), time.monotonic()
            cpu = None if cpu0 is None else (cpu1 - cpu0) / (t1 - t0)
            results.append(rate_result(f"goodput {net.plan.host(src).dc} -> "
                                       f"{net.plan.host(dst).dc}", d.rate, bps, cpu))
    return results


def run(spec=None, delay_backend="auto", seconds=5.0, progress=lambda text: None,
        cluster=None, machine_of=None):
    """Build, measure, tear down; returns (backend name, [Result]).  With a
    cluster (testbed.spanning), the network spans its machines, DC d on
    machine_of[d], and each link is measured wherever its ends are."""
    default = spec is None
    spec = spec or default_spec()
    if cluster is None:
        built = network.build(spec, delay_backend=delay_backend)
    else:
        from testbed.spanning import span
        built = span.build(spec, cluster, machine_of, delay_backend,
                           text=DEFAULT_TOPOLOGY if default else None)
    with built as net:
        return net.backend.name, measure_links(net, seconds, progress)
