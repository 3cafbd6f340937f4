"""A paced sender puts its set rate on the emulated WAN, and a rate change
takes hold on the wire, as the link's shaper counts it."""

import json
import sys
import time

import pytest

from agents.planning.wan import GOODPUT_SHARE
from testbed.emulation import measure, network
from tests.mininet.helpers import spec_of

pytestmark = pytest.mark.mininet

PORT = 7300
CHUNK = 64 * 1024      # 52 ms apart at 10 Mbit/s: a sampling window holds dozens
PHASES = [(10e6, 4.0), (20e6, 4.0)]   # (payload bit/s, seconds), one after the other
SETTLE = 1.0           # seconds of each phase left out: TCP's start, the change itself

TWO_DC = """
datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
wan: [{between: [east, west], bw: 50mbit, delay: 10ms}]
"""

# Keeps a backlog towards the receiver and runs the agents' loop (recv)
# while it is paced; prints each phase's monotonic start and end.
SENDER = r"""
import json, sys, time
import numpy as np
from agents.transport import Endpoint, RecvTimeout
me, peer, port, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ep = Endpoint("sender", me, port, {"receiver": (peer, port)}, chunk_bytes=chunk)
ep.send("receiver", {"type": "hello"})
assert ep.recv(timeout=30).header["type"] == "hello"     # both connections are up
block = np.zeros(16 * chunk // 4, np.float32)
for rate, seconds in json.loads(sys.argv[5]):
    ep.set_rate("receiver", rate)
    start, before = time.monotonic(), ep.paced("receiver")
    while time.monotonic() < start + seconds:
        for _ in range(3 - ep.queue_length("receiver")):   # bounded, should pacing fail
            ep.send("receiver", {"type": "data"}, block)
        try:
            ep.recv(timeout=0.1)
        except RecvTimeout:
            pass
    after = ep.paced("receiver")
    print(json.dumps({"rate": rate, "start": start, "end": time.monotonic(),
                      "paced": [after[0] - before[0], after[1] - before[1]]}), flush=True)
ep.close(drain=False)
"""

RECEIVER = r"""
import sys
from agents.transport import Endpoint, RecvTimeout
me, peer, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
ep = Endpoint("receiver", me, port, {"sender": (peer, port)})
assert ep.recv(timeout=30).header["type"] == "hello"
ep.send("sender", {"type": "hello"})
try:
    while True:
        ep.recv(timeout=5)
except RecvTimeout:
    pass
ep.close(drain=False)
"""


def wire_rate(samples, start, end):
    """bit/s the shaper sent between the first and last counter samples
    inside [start, end]."""
    inside = [(t, b) for t, b in samples if start <= t <= end]
    (t0, b0), (t1, b1) = inside[0], inside[-1]
    return (b1 - b0) * 8 / (t1 - t0)


@pytest.mark.timeout(180)
def test_a_paced_sender_puts_its_set_rate_on_the_wan_and_a_change_takes_hold():
    with network.build(spec_of(TWO_DC)) as net:
        measure.ping_rtt(net, "east-w0", "west-w0", count=1)   # ARP resolved first
        east, west = net.ip("east-w0"), net.ip("west-w0")
        receiver = net.node("west-w0").popen(
            [sys.executable, "-c", RECEIVER, west, east, str(PORT)], text=True)
        sender = net.node("east-w0").popen(
            [sys.executable, "-c", SENDER, east, west, str(PORT), str(CHUNK), json.dumps(PHASES)],
            text=True)
        samples = []
        try:
            while sender.poll() is None:
                samples.append((time.monotonic(), net.shaper_counters("east", "west")[1]))
                time.sleep(0.1)
            out, err = sender.communicate(timeout=30)
            assert sender.returncode == 0, err[-2000:]
        finally:
            for proc in (sender, receiver):
                if proc.poll() is None:
                    proc.kill()
                proc.communicate()
    phases = [json.loads(line) for line in out.splitlines()]
    assert [p["rate"] for p in phases] == [rate for rate, _ in PHASES]
    ratios = []
    for p in phases:
        # The set rate is payload; the shaper counts frames, headers included
        # (1514 bytes carry 1448 of payload).  So the wire rate times that
        # share is compared with it; ZeroMQ's framing and each chunk's JSON
        # header add under 1% more, within the tolerance.
        on_wire = wire_rate(samples, p["start"] + SETTLE, p["end"])
        achieved = p["paced"][0] * 8 / p["paced"][1]
        ratios.append({"set": p["rate"], "wire_payload": on_wire * GOODPUT_SHARE / p["rate"],
                       "sender": achieved / p["rate"]})
    print(ratios)
    for r in ratios:
        assert r["wire_payload"] == pytest.approx(1.0, abs=0.10), ratios
        assert r["sender"] == pytest.approx(1.0, abs=0.10), ratios
