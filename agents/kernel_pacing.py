"""Pacing a connection in the kernel: TCP paces a socket that has
SO_MAX_PACING_RATE set (Linux 4.13 and later, with or without the fq
qdisc), spacing its packets so that its payload leaves at most at that
rate (a socket capped at 2 MB/s delivered 1.003-1.004 times that in
payload with 1448-byte segments, tests/unit/test_kernel_pacing.py).

The transport's token bucket sets how many bytes a connection gets per
second, but it releases them a chunk at a time, and TCP sends a released
chunk as one burst of up to its congestion window.  Where several
connections share a WAN link whose queue holds one bandwidth-delay
product, their bursts overflow it though their rates add up to less than
the link, and every loss costs a retransmission and a smaller window.
Capped in the kernel a little above the bucket's rate, a connection
spreads each chunk over its share of the link, and the bucket's average
stays as it was.

ZeroMQ does not hand out the sockets of its connections, so they are
found among this process's file descriptors by the address they are
connected to (an Endpoint's heartbeats to the same peer share the cap;
they carry a few bytes a second).  A connection ZeroMQ makes again later
(after a peer restarts) is not capped until the next call.
"""

import os
import socket
import struct

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
UNLIMITED = (1 << 64) - 1


def connected_to(host, port):
    """File descriptors of this process's TCP sockets connected to host:port."""
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return []
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue             # closed meanwhile, or not a socket Python knows
        try:
            if sock.type == socket.SOCK_STREAM and sock.getpeername()[:2] == (address, port):
                found.append(fd)
        except (OSError, TypeError):
            pass                 # not connected, or a socket of another family
        finally:
            sock.close()         # closes the duplicate only
    return found


def cap(fd, bytes_per_s):
    """Pace TCP socket `fd` at most at bytes_per_s of payload (None: no cap)."""
    value = UNLIMITED if not bytes_per_s else max(1, int(bytes_per_s))
    sock = socket.socket(fileno=os.dup(fd))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("Q", value))
    finally:
        sock.close()


def read_cap(fd):
    """The cap of TCP socket `fd` in bytes/s (UNLIMITED when none)."""
    sock = socket.socket(fileno=os.dup(fd))
    try:
        return struct.unpack("Q", sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8))[0]
    finally:
        sock.close()
