"""Userspace delay line: the WAN link's delay, jitter and loss where the
kernel has no sch_netem.

Runs inside a middle namespace with two interfaces, ``a`` (towards one
router) and ``b`` (towards the other).  Every frame read on one side is held
for the direction's delay (plus jitter) and written to the other side, or
dropped with the direction's loss probability.  Rate shaping is not done
here: HTB at the routers' egresses does it, so this process only delays.

Jitter: each frame's delay is uniform in delay +- jitter, and frames keep
their order within a direction, under any load.  Both hold because the
jitter offset is a reflected random walk on [-jitter, +jitter] whose step
never exceeds the gap since the previous frame: a symmetric step keeps the
offset uniform, and an offset that falls by at most the gap cannot make a
frame overtake the one ahead.  Frames 2 x jitter or more apart get
independent offsets; closer ones get correlated offsets (the delay wanders
smoothly under load, as queueing delay does).

A frame's arrival is the kernel's receive timestamp, not when this process
got round to reading it, so a relay delayed by a busy CPU still keeps the
spacing of the frames it holds (shorter than the delay).

Live changes and counters go through a Unix stream socket: one JSON line in,
one JSON line out, e.g. ``{"op": "set", "dir": "ab", "delay": 0.04}`` or
``{"op": "stats"}``.  A request is a flat JSON object of strings and
numbers (each key once, numbers finite; no escapes in a string but \\" \\\\
\\/ \\n \\t; at most MAX_KEY bytes in a key and MAX_STRING in a string
value), at most MAX_REQUEST bytes, and must arrive whole within
REQUEST_DEADLINE: the line forwards nothing while it reads one, so a client
that trickles bytes holds it up that long at
most.  The compiled delay line reads the same requests the same way.

This module runs as its own process and imports nothing from the testbed,
so it starts fast and never pulls Mininet into the namespace.
"""

import argparse
import collections
import ctypes
import json
import math
import os
import random
import re
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
# select() sleeps to the microsecond (epoll and poll round up to whole
# milliseconds, which made a lone frame up to 1 ms late).  A wake-up also
# releases every frame due within EARLY, so frames closer together than
# that share one wake-up; EARLY is about the wake-up's own latency, so a
# frame's release error stays near zero either way.
EARLY = 0.0002
# What a wake-up takes from the timer firing to the frame's send (measured:
# 0.1-0.15 ms on a busy two-core VM); sleeping this much less centres the
# release of a lone frame on its deadline.
WAKE_LEAD = 0.0001
PR_SET_TIMERSLACK = 29
TIMER_SLACK_NS = 5000
MAX_FRAME = 65536
SO_TIMESTAMPNS = 35
ANC_SPACE = 64
REQUEST_DEADLINE = 0.25
MAX_REQUEST = 4095        # bytes of a request line, as the compiled line's buffer holds
MAX_KEY, MAX_STRING = 31, 63   # bytes of a key and of a string value, as its buffers hold
ESCAPES = set('"\\/nt')      # the escapes its strings take
STRING_ESCAPE = re.compile(r"\\(.)", re.S)


class Direction:
    """One way through the line: a FIFO of (deadline, frame) and its knobs."""

    def __init__(self, name, out_sock, delay, jitter, loss, rng):
        self.name = name
        self.out = out_sock
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
        self.rng = rng
        self.queue = collections.deque()
        self.last_deadline = 0.0
        self.offset = None             # jitter offset of the previous frame
        self.last_arrival = None
        self.frames = 0
        self.bytes = 0
        self.dropped = 0

    def admit(self, frame, now):
        if self.loss > 0 and self.rng.random() < self.loss:
            self.dropped += 1
            return
        hold = self.delay
        if self.jitter > 0:
            hold = max(0.0, hold + self.jitter_offset(now))
        # The floor only matters right after a live change of the delay.
        deadline = max(now + hold, self.last_deadline)
        self.last_deadline = deadline
        self.queue.append((deadline, frame))

    def jitter_offset(self, now):
        """This frame's offset, uniform in [-jitter, +jitter] (see the module
        docstring for why it never reorders)."""
        j = self.jitter
        gap = math.inf if self.last_arrival is None else max(0.0, now - self.last_arrival)
        self.last_arrival = now
        if self.offset is None or gap >= 2 * j or abs(self.offset) > j:
            self.offset = self.rng.uniform(-j, j)
        else:
            x = self.offset + self.rng.uniform(-gap, gap)
            self.offset = 2 * j - x if x > j else -2 * j - x if x < -j else x
        return self.offset

    def flush(self, now):
        q = self.queue
        while q and q[0][0] <= now + EARLY:
            frame = q.popleft()[1]
            try:
                self.out.send(frame)
            except OSError:
                self.dropped += 1
                continue
            self.frames += 1
            self.bytes += len(frame)

    def next_deadline(self):
        return self.queue[0][0] if self.queue else None

    def settings(self):
        return {"delay": self.delay, "jitter": self.jitter, "loss": self.loss}

    def stats(self):
        return {"frames": self.frames, "bytes": self.bytes,
                "dropped": self.dropped, "queued": len(self.queue)}


def set_timer_slack(ns):
    """Let the kernel fire our timeouts at most `ns` late (50 us by default)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def open_packet_socket(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    # Our own transmissions would otherwise come back to us as captured frames.
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE, root only
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setblocking(False)
    return s


def drain(sock, direction, now):
    """Admit every waiting frame at its kernel arrival time (on our clock)."""
    wall = time.time()
    while True:
        try:
            frame, anc, _, _ = sock.recvmsg(MAX_FRAME, ANC_SPACE)
        except BlockingIOError:
            return
        direction.admit(frame, now + arrival_wall(anc, wall) - wall)


def arrival_wall(anc, default):
    """The SO_TIMESTAMPNS receive time (wall clock) in `anc`, or `default`."""
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec + nsec * 1e-9
    return default


class BadRequest(ValueError):
    pass


def read_request(conn, deadline=REQUEST_DEADLINE):
    """The request line a client sends: bytes up to the first newline (or
    to the end of what it sent), read within `deadline` seconds in all."""
    data = b""
    until = time.monotonic() + deadline
    while b"\n" not in data:
        left = until - time.monotonic()
        if left <= 0:
            raise BadRequest(f"the request did not arrive whole within {deadline:g}s")
        conn.settimeout(left)
        try:
            chunk = conn.recv(MAX_REQUEST + 1 - len(data))
        except TimeoutError:
            raise BadRequest(f"the request did not arrive whole within {deadline:g}s") from None
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST and b"\n" not in data[:MAX_REQUEST]:
            raise BadRequest("request too long")
    line = data.split(b"\n", 1)[0]
    if not line:
        raise BadRequest("no request")
    return line


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise BadRequest("bad JSON: a key given twice")
    return dict(pairs)


def _no_constant(name):
    raise BadRequest(f"bad JSON: {name} is not a number")


def parse_request(line):
    """A request line -> its flat mapping of strings and numbers."""
    text = line.decode(errors="replace") if isinstance(line, bytes) else line
    if any(escape not in ESCAPES for escape in STRING_ESCAPE.findall(text)):
        raise BadRequest("unsupported escape in a JSON string")
    try:
        req = json.loads(line, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise BadRequest(e if isinstance(e, BadRequest) else f"bad JSON: {e}") from None
    if not isinstance(req, dict):
        raise BadRequest("bad JSON: not a JSON object")
    for key, value in req.items():
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise BadRequest("bad JSON: expected a string or a number as a value")
        if len(key.encode()) > MAX_KEY or (isinstance(value, str) and len(value.encode()) > MAX_STRING):
            raise BadRequest("JSON string too long")
    return req


def number(req, key):
    """A knob's new value: a finite number at least zero (a loss at most one)."""
    value = req[key]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise BadRequest(f"{key} is not a number: {value!r}")
    if value < 0 or (key == "loss" and value > 1):
        raise BadRequest(f"{key} out of range: {value:g}")
    return float(value)


def reply_to(req, directions):
    op = req.get("op")
    if op == "set":
        d = directions.get(req.get("dir")) if isinstance(req.get("dir"), str) else None
        if d is None:
            raise BadRequest(f"unknown dir {req.get('dir')!r}; use ab or ba")
        values = {key: number(req, key) for key in ("delay", "jitter", "loss") if key in req}
        for key, value in values.items():     # every value checked before any is applied
            setattr(d, key, value)
        return {"ok": True, "settings": d.settings()}
    if op == "stats":
        return {"ok": True, "pid": os.getpid(), "cpu_s": sum(os.times()[:2]),
                "dirs": {n: dict(d.settings(), **d.stats()) for n, d in directions.items()}}
    raise BadRequest(f"unknown op {op!r}")


def answer(conn, directions):
    """Serve one control request on an accepted connection."""
    try:
        reply = reply_to(parse_request(read_request(conn)), directions)
    except BadRequest as e:
        reply = {"ok": False, "error": str(e)}
    except OSError as e:
        reply = {"ok": False, "error": f"reading the request: {e}"}
    try:
        conn.settimeout(REQUEST_DEADLINE)
        conn.sendall((json.dumps(reply) + "\n").encode())
    except OSError:
        pass
    conn.close()


def serve(args):
    sock_a = open_packet_socket(args.a)
    sock_b = open_packet_socket(args.b)
    rng = random.Random(args.seed)
    ab = Direction("ab", sock_b, args.ab_delay, args.ab_jitter, args.ab_loss, rng)
    ba = Direction("ba", sock_a, args.ba_delay, args.ba_jitter, args.ba_loss, rng)
    directions = {"ab": ab, "ba": ba}

    if os.path.exists(args.control):
        os.unlink(args.control)
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ctl.bind(args.control)
    os.chmod(args.control, 0o600)
    ctl.listen(8)
    ctl.setblocking(False)

    fd_a, fd_b, fd_ctl = sock_a.fileno(), sock_b.fileno(), ctl.fileno()
    watched = [fd_a, fd_b, fd_ctl]

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)

    set_timer_slack(TIMER_SLACK_NS)
    clock = time.monotonic
    while not stop:
        now = clock()
        ab.flush(now)
        ba.flush(now)
        deadlines = [d for d in (ab.next_deadline(), ba.next_deadline()) if d is not None]
        timeout = max(0.0, min(deadlines) - clock() - WAKE_LEAD) if deadlines else 1.0
        try:
            ready, _, _ = select.select(watched, [], [], timeout)
        except InterruptedError:
            continue
        now = clock()
        for fd in ready:
            if fd == fd_a:
                drain(sock_a, ab, now)
            elif fd == fd_b:
                drain(sock_b, ba, now)
            elif fd == fd_ctl:
                try:
                    conn, _ = ctl.accept()
                except BlockingIOError:
                    continue
                answer(conn, directions)
    try:
        os.unlink(args.control)
    except OSError:
        pass


def parse_args(argv):
    p = argparse.ArgumentParser(prog="relay", description=__doc__.split("\n")[0])
    p.add_argument("--a", required=True, help="interface towards side a")
    p.add_argument("--b", required=True, help="interface towards side b")
    p.add_argument("--control", required=True, help="Unix socket path for control")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", default="", help="owner tag, so cleanup can find us")
    for d in ("ab", "ba"):
        p.add_argument(f"--{d}-delay", type=float, default=0.0)
        p.add_argument(f"--{d}-jitter", type=float, default=0.0)
        p.add_argument(f"--{d}-loss", type=float, default=0.0)
    return p.parse_args(argv)


def main(argv=None):
    serve(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
