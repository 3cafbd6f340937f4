"""Pacing in the kernel: the premise (Linux paces a TCP socket capped with
SO_MAX_PACING_RATE), finding ZeroMQ's connections by address, and the
transport capping a paced peer's connection a little above its rate."""

import socket
import threading
import time

import numpy as np
import pytest

from agents import kernel_pacing
from agents.transport import Endpoint
from tests.ports import free_port

RATE = 16e6                      # bit/s of payload


def test_a_capped_tcp_socket_sends_at_its_cap():
    # The premise: without it the kernel would cap nothing and the transport's
    # caps would be numbers in a socket.  2 MB/s for 3 MB: about 1.5 s.
    server = socket.create_server(("127.0.0.1", 0))
    got, times = [0], []

    def receive():
        conn, _ = server.accept()
        with conn:
            while True:
                data = conn.recv(1 << 20)
                if not data:
                    return
                got[0] += len(data)
                times.append((time.monotonic(), got[0]))

    thread = threading.Thread(target=receive)
    thread.start()
    sender = socket.socket()
    sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1448)    # a WAN's frames, not loopback's
    sender.connect(server.getsockname())
    kernel_pacing.cap(sender.fileno(), 2e6)
    assert kernel_pacing.read_cap(sender.fileno()) == 2_000_000
    sender.sendall(b"x" * 3_000_000)
    sender.close()
    thread.join(timeout=30)
    server.close()
    (t0, b0), (t1, b1) = times[0], times[-1]
    # The cap counts payload, as a receiver does: 1.003-1.004 measured here.
    assert (b1 - b0) / (t1 - t0) / 2e6 == pytest.approx(1.0, abs=0.1)


def test_only_the_sockets_connected_to_an_address_are_found():
    server = socket.create_server(("127.0.0.1", 0))
    other = socket.create_server(("127.0.0.1", 0))
    ours = [socket.create_connection(server.getsockname()) for _ in range(2)]
    theirs = socket.create_connection(other.getsockname())
    try:
        found = kernel_pacing.connected_to("127.0.0.1", server.getsockname()[1])
        assert sorted(found) == sorted(s.fileno() for s in ours)
        assert kernel_pacing.connected_to("127.0.0.1", free_port()) == []
        assert kernel_pacing.connected_to("no-such-host.invalid", 1) == []
    finally:
        for s in ours + [theirs, server, other]:
            s.close()


def test_a_paced_peer_s_connection_is_capped_a_little_above_its_rate_and_freed_when_unpaced():
    pa, pb, pc = free_port(), free_port(), free_port()
    a = Endpoint("a", "127.0.0.1", pa, {"b": ("127.0.0.1", pb), "c": ("127.0.0.1", pc)})
    b = Endpoint("b", "127.0.0.1", pb, {"a": ("127.0.0.1", pa)})
    c = Endpoint("c", "127.0.0.1", pc, {"a": ("127.0.0.1", pa)})
    try:
        for peer in (b, c):                       # connections up before they are looked for
            a.send(peer.name, {"type": "hello"}, np.zeros(4, np.float32))
            assert peer.recv(timeout=10).header["type"] == "hello"
        to_b = kernel_pacing.connected_to("127.0.0.1", pb)
        to_c = kernel_pacing.connected_to("127.0.0.1", pc)
        assert to_b and to_c
        a.set_rate("b", RATE, kernel=1.05)
        # 2 MB/s of payload, and 5% above it for the chunks' headers.
        want = int(RATE / 8 * 1.05)
        assert [kernel_pacing.read_cap(fd) for fd in to_b] == [want] * len(to_b)
        assert {kernel_pacing.read_cap(fd) for fd in to_c} == {kernel_pacing.UNLIMITED}
        a.set_rate("b", RATE / 2, kernel=1.05)
        assert {kernel_pacing.read_cap(fd) for fd in to_b} == {int(RATE / 16 * 1.05)}
        a.set_rate("b", None, kernel=1.05)
        assert {kernel_pacing.read_cap(fd) for fd in to_b} == {kernel_pacing.UNLIMITED}
        a.set_rate("b", RATE)                     # paced, but not asked to cap
        assert {kernel_pacing.read_cap(fd) for fd in to_b} == {kernel_pacing.UNLIMITED}
    finally:
        for ep in (a, b, c):
            ep.close(drain=False)


def test_the_data_plane_caps_the_connections_its_node_paces_by_the_node_s_margin():
    import types

    from agents.dataplane.driver import DataPlane
    pa, pb = free_port(), free_port()
    a = Endpoint("a", "127.0.0.1", pa, {"b": ("127.0.0.1", pb)})
    b = Endpoint("b", "127.0.0.1", pb, {"a": ("127.0.0.1", pa)})
    try:
        a.send("b", {"type": "hello"})
        b.recv(timeout=10)
        rates = [{"b": RATE}, {"b": 0.0}]
        node = types.SimpleNamespace(take_rates=lambda: rates.pop(0), kernel_pace=1.2)
        plane = DataPlane(a, node, log=lambda kind, **f: None)
        to_b = kernel_pacing.connected_to("127.0.0.1", pb)
        plane.send([])
        assert {kernel_pacing.read_cap(fd) for fd in to_b} == {int(RATE / 8 * 1.2)}
        plane.send([])                           # 0: unpaced, and the cap lifted
        assert a.rate("b") is None
        assert {kernel_pacing.read_cap(fd) for fd in to_b} == {kernel_pacing.UNLIMITED}
    finally:
        a.close(drain=False)
        b.close(drain=False)
