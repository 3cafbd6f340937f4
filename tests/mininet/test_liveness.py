"""Heartbeats on a WAN link held full: they have a class and a queue of
their own, so a live peer keeps beating through a saturated tail-drop
queue instead of being taken for dead."""

import json
import subprocess
import sys
import textwrap
import time

import pytest

from testbed.emulation import measure, network
from tests.mininet.helpers import spec_of

pytestmark = pytest.mark.mininet

# A slow link whose tail-drop queue a flood of small datagrams at four
# times its rate holds full: three frames in four that reach it are lost,
# a heartbeat's as much as any (a byte FIFO full of full-sized frames
# would still take a small one now and then).
SATURATED = """
datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
wan: [{between: [east, west], bw: 2mbit, delay: 20ms}]
"""
BEAT = 0.1
SECONDS = 15
PEER = textwrap.dedent("""
    import json, sys, time
    from agents.transport import Endpoint, PeerDead, RecvTimeout
    name, host, port, peer, peer_host, seconds = sys.argv[1:7]
    ep = Endpoint(name, host, int(port), {peer: (peer_host, int(port))}, heartbeat_interval=%(beat)r,
                  dead_after=60.0, first_contact_grace=60.0)
    print("ready", flush=True)
    gaps, last, end = [], None, time.monotonic() + float(seconds)
    while time.monotonic() < end:
        try:
            ep.recv(timeout=0.05)
        except RecvTimeout:
            pass
        seen = ep.last_seen.get(peer)
        if seen is not None and seen != last:
            if last is not None:
                gaps.append(seen - last)
            last = seen
    print(json.dumps({"gaps": gaps}), flush=True)
    ep.close(drain=False)
""") % {"beat": BEAT}


def start_peer(net, name, peer, seconds):
    proc = net.node(name).popen([sys.executable, "-c", PEER, name, net.ip(name), "7300", peer,
                                 net.ip(peer), str(seconds)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n", proc.stderr.read()
    return proc


def test_heartbeats_cross_a_saturated_tail_drop_queue_on_time():
    with network.build(spec_of(SATURATED)) as net:
        server = measure.start_iperf_server(net, "west-w0")
        flood = net.node("east-w0").popen(
            ["iperf3", "-c", net.ip("west-w0"), "-u", "-b", "8M", "-l", "100", "-t", str(SECONDS + 10)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(3)              # the queue is full by now
            west = start_peer(net, "west-w0", "east-w0", SECONDS)
            east = start_peer(net, "east-w0", "west-w0", SECONDS)
            out, err = west.communicate(timeout=SECONDS + 30)
            east.communicate(timeout=30)
            assert west.returncode == 0, err
            # The flood still held the link: what east sent west crossed it throughout.
            node, dev, _, _ = net.egress("east", "west")
            stats = network.run_in(node, ["tc", "-s", "qdisc", "show", "dev", dev])
        finally:
            for proc in (flood, server):
                proc.kill()
                proc.wait()
    gaps = json.loads(out)["gaps"]
    dropped = int(stats.split(" 10: ")[1].split("dropped ")[1].split(",")[0])
    assert dropped > 10_000, stats       # the data queue was full and dropping
    # East beats every 0.1 s; each beat reached west within a few of them.
    assert len(gaps) >= SECONDS / BEAT / 2 and max(gaps) < 10 * BEAT, (max(gaps), len(gaps))
