"""ZeroMQ transport between agents: a JSON header plus a tensor payload.

Every agent binds one ROUTER socket and reaches each peer through a DEALER
socket of its own (identity = its name), so each ordered pair of agents has
its own TCP connection.  A tensor is sent as chunks of `chunk_bytes`, each
chunk a two-frame message [header, bytes] sent without copying; chunks are
the unit later overlays relay, split across paths and prioritise.  The
receiver reassembles them into one buffer.

The transport knows nothing about algorithms.  It counts bytes per peer,
times every received message (first to last chunk) as a passive goodput
measurement, and tells a dead peer (silent past `dead_after`, heartbeats
included) from a slow one.

Queued mode (`queued=True`, for overlays that route by backlog): each
peer's socket holds at most one chunk (send high-water mark 1, a small
kernel send buffer) and the rest waits in an application queue per peer,
so `queue_length(peer)` is the real backlog towards that peer.  A message
whose header asks for `stamp` gets the wall-clock time its first chunk
left that queue as `sent`, and the receiver adds `arrived` when its last
chunk is in: a one-way transfer time free of the time it queued.

Low priorities (`send(..., priority=1 or more)`, copies that help only
on an idle connection): such a message waits for every lower number
queued to the peer, and with `low_gate` set, also until the kernel holds
fewer than that many bytes for the peer (TIOCOUTQ on the connection's
socket), so a message of priority 0 that comes later waits behind at
most that much in the kernel rather than a whole send buffer.

Pacing (`set_rate(peer, bits_per_s)`, for coflow schedulers and planners
that give each sender a rate per peer): a paced peer's messages wait in its
application queue in either mode, and a token bucket over payload bytes
(burst: one chunk) decides when the next chunk may leave; a sender woken
late with a backlog makes up to PACE_CATCH_UP seconds of lost time up with
its next chunks.  Nothing sleeps:
the receive loop wakes up when the next chunk is due, so an agent keeps
receiving while its paced data waits.  `paced(peer)` is the rate achieved.
Asked to (`kernel`), a paced peer's TCP connection is also capped in the
kernel a little above that rate (agents.kernel_pacing), so the chunks the
bucket releases leave as evenly spaced packets rather than as bursts.
"""

import fcntl
import itertools
import json
import math
import struct
import termios
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import zmq

from agents import config, kernel_pacing
from agents.fairqueue import FairQueue
from agents.pacing import TokenBucket

HEARTBEAT_SUFFIX = "#hb"
# Messages smaller than this are not logged as transfers (control traffic).
XFER_LOG_MIN_BYTES = 64 * 1024
# Kernel send buffer of a queued socket: small, so the backlog stays in the
# application queue where it can be seen.
QUEUED_SNDBUF = 256 * 1024
# Seconds between looks at a connection whose low-priority head waits for
# the kernel's queue to drain below `low_gate`.
GATE_RECHECK = 0.02
# Seconds a closing endpoint waits, at most, for its queued messages to leave.
CLOSE_LINGER = 60.0
# Seconds of its rate a paced sender woken late may make up
# (agents.pacing, `catch_up`): more than a busy two-core machine makes
# it wait.  With another thread holding the GIL in 20 ms slices, a
# sender here waited 100-250 ms now and then; 50 ms of catch-up left
# 0.88-0.96 of the rate, 0.25 s 0.98-1.0 (tests/unit/test_pacing.py).
# The burst goes into the sender's socket: TCP's window, not this, sets
# what reaches a WAN link's queue.
PACE_CATCH_UP = 0.25


class PeerDead(RuntimeError):
    """A peer stopped talking (no data and no heartbeat for `dead_after`)."""

    def __init__(self, peer, silent_for):
        self.peer = peer
        super().__init__(f"peer {peer} has been silent for {silent_for:.1f}s: presumed dead")


class RecvTimeout(RuntimeError):
    pass


@dataclass
class Message:
    sender: str
    header: dict
    payload: np.ndarray = None       # None for header-only messages
    first: float = 0.0               # monotonic time the first chunk arrived
    last: float = 0.0                # ... and the last one


@dataclass
class _Outgoing:
    meta: dict
    view: memoryview
    chunks: list
    next: int = 0
    queued_at: float = 0.0           # monotonic time it entered the queue
    priority: float = 0              # agents.fairqueue: 1 and above only use an idle connection


@dataclass
class _PaceMeter:
    """Payload released to a paced peer while it had a backlog: each chunk
    that was already waiting when the one before it left counts with the
    time between the two, so idle gaps count as neither bytes nor time."""
    bytes: int = 0
    seconds: float = 0.0
    last: float = None               # the previous release, None when idle


@dataclass
class _Partial:
    header: dict
    buf: np.ndarray
    received: int = 0
    chunks: int = 0
    first: float = field(default_factory=time.monotonic)
    first_bytes: int = 0     # the first chunk arrived whole at `first`


def split(nbytes, chunk_bytes):
    """[(offset, length)] chunks covering nbytes; one empty chunk for 0 bytes."""
    if nbytes == 0:
        return [(0, 0)]
    return [(off, min(chunk_bytes, nbytes - off)) for off in range(0, nbytes, chunk_bytes)]


class Endpoint:
    def __init__(self, name, host, port, peers, chunk_bytes=1 << 20, heartbeat_interval=None,
                 dead_after=5.0, io_threads=1, log=None, first_contact_grace=60.0, source=None,
                 queued=False):
        """peers: {name: (host, port)} of everyone this agent talks to.
        A peer never heard from may still be starting, so it is presumed
        dead only after `first_contact_grace` (at least `dead_after`)
        counted from our own start.  `source`, an address of this host,
        is where our own connections leave from (routing may depend on it).
        Heartbeats go every `heartbeat_interval` seconds, by default the
        interval `dead_after` calls for (`agents.config.heartbeat_interval`)."""
        self.source = source
        self.queued = queued
        self.outgoing = {}            # peer -> FairQueue of _Outgoing (queued mode, paced peers)
        self.buckets = {}             # peer -> TokenBucket of a paced peer
        self.meters = {}              # peer -> _PaceMeter
        self.capped = set()           # peers whose connection the kernel paces
        self.obsolete = None          # header -> True: a queued message no longer needed (pump)
        self.dropped = 0              # messages pump dropped as obsolete
        self.low_gate = None          # bytes: priority 1 and above waits while the kernel holds this many
        self._fds = {}                # peer -> (its connections' descriptors, when looked up)
        self.name = name
        self.chunk_bytes = int(chunk_bytes)
        self.dead_after = dead_after
        self.first_contact_grace = max(dead_after, first_contact_grace)
        self.log = log or (lambda kind, **f: None)
        self.ctx = zmq.Context(io_threads)
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.RCVHWM, 0)
        self.router.bind(f"tcp://{host}:{port}")
        self.peers = dict(peers)
        self.dealers = {}
        for peer, (phost, pport) in self.peers.items():
            self.dealers[peer] = self._dealer(name, phost, pport)
        self._msg_ids = itertools.count()
        self._partial = {}
        self.last_seen = {}
        self.started = time.monotonic()
        self.bytes_sent = {p: 0 for p in self.peers}
        self.bytes_received = {p: 0 for p in self.peers}
        self._stop = threading.Event()
        # Heartbeats have a context of their own, so they go on while a
        # closing endpoint waits for its last data to leave.
        self.hb_ctx = zmq.Context(1)
        self.heartbeat_interval = heartbeat_interval or config.heartbeat_interval(dead_after)
        self._hb_thread = threading.Thread(target=self._heartbeats, args=(self.heartbeat_interval,),
                                           daemon=True)
        self._hb_thread.start()

    def _dealer(self, identity, host, port, ctx=None):
        s = (ctx or self.ctx).socket(zmq.DEALER)
        s.setsockopt(zmq.IDENTITY, identity.encode())
        s.setsockopt(zmq.LINGER, 0)
        if self.queued:
            s.setsockopt(zmq.SNDHWM, 1)
            s.setsockopt(zmq.SNDBUF, QUEUED_SNDBUF)
        else:
            s.setsockopt(zmq.SNDHWM, 0)
        s.connect(f"tcp://{self.source}:0;{host}:{port}" if self.source else f"tcp://{host}:{port}")
        return s

    # ----------------------------------------------------------- sending

    def send(self, peer, header, payload=None, flow=None, weight=1.0, priority=0):
        """Send a header and optional numpy array to a peer, in chunks.
        Returns immediately; ZeroMQ moves the bytes.  The array must not be
        changed until the peer has it (callers send fresh arrays).  Where
        messages wait in the peer's queue (queued mode, paced peers), those
        of different `flow`s share the connection in proportion to their
        `weight`, and a higher `priority` number waits for every lower one
        (agents.fairqueue); without a flow they keep their order."""
        sock = self.dealers[peer]
        msg = next(self._msg_ids)
        if payload is None:
            out = _Outgoing({**header, "msg": msg, "nchunks": 0}, None, [])
        else:
            arr = np.ascontiguousarray(payload)
            chunks = split(arr.nbytes, self.chunk_bytes)
            meta = {**header, "msg": msg, "nchunks": len(chunks), "nbytes": arr.nbytes,
                    "dtype": arr.dtype.str, "shape": list(arr.shape)}
            self.bytes_sent[peer] = self.bytes_sent.get(peer, 0) + arr.nbytes
            out = _Outgoing(meta, memoryview(arr).cast("B"), chunks)
        queue = self.outgoing.setdefault(peer, FairQueue())
        if not self.queued and peer not in self.buckets and not queue:
            self._send_chunks(sock, out, block=True)
            return
        out.queued_at = time.monotonic()
        out.priority = priority
        queue.append(out, flow, weight, 0 if payload is None else arr.nbytes, priority)
        if len(queue) == 1 or self.low_gate is not None:   # a gated head may have been put back
            self.pump(peer)

    def set_rate(self, peer, bits_per_s, burst=None, kernel=0.0):
        """Pace what goes to peer to bits_per_s of payload (None or 0:
        unpaced), from now on, what is queued included.  burst: bytes that
        may go at once when pacing starts, one chunk unless given.
        kernel: cap the connection in the kernel at `kernel` times that rate
        (0 or unpaced: no cap); it counts what TCP carries, the chunks'
        headers too, so it must be a little above 1 not to hold the bucket back."""
        if peer not in self.dealers:
            raise KeyError(f"no peer {peer!r}")
        if not bits_per_s:
            self.buckets.pop(peer, None)
            if peer in self.meters:
                self.meters[peer].last = None
        elif bits_per_s < 0:
            raise ValueError(f"a rate must not be negative, not {bits_per_s!r} bit/s")
        elif peer in self.buckets:
            self.buckets[peer].set_rate(bits_per_s, time.monotonic())
        else:
            self.buckets[peer] = TokenBucket(bits_per_s, burst or self.chunk_bytes, time.monotonic(),
                                             catch_up=PACE_CATCH_UP)
            self.meters.setdefault(peer, _PaceMeter())
        if bits_per_s and kernel:
            self._cap(peer, bits_per_s / 8 * kernel)
        elif peer in self.capped:
            self._cap(peer, None)
        self.pump(peer)

    def _cap(self, peer, bytes_per_s):
        host, port = self.peers[peer]
        for fd in kernel_pacing.connected_to(host, port):
            kernel_pacing.cap(fd, bytes_per_s)
        if bytes_per_s:
            self.capped.add(peer)
        else:
            self.capped.discard(peer)

    def rate(self, peer):
        """The rate peer is paced to in bit/s, None when unpaced."""
        bucket = self.buckets.get(peer)
        return bucket.rate if bucket else None

    def paced(self, peer):
        """(payload bytes, seconds) released to peer while paced and
        backlogged; their ratio is the rate achieved.  Cumulative: callers
        take differences for an interval."""
        m = self.meters.get(peer, _PaceMeter())
        return m.bytes, m.seconds

    def _send_chunks(self, sock, out, block, peer=None):
        """Send out's chunks from its next one on; False when the socket is
        full (queued mode) or peer's bucket holds the next chunk back."""
        flags = 0 if block else zmq.NOBLOCK
        bucket = self.buckets.get(peer)
        if not out.chunks:
            try:
                sock.send_multipart([json.dumps(out.meta).encode()], flags=flags)
            except zmq.Again:
                return False
            return True
        while out.next < len(out.chunks):
            off, length = out.chunks[out.next]
            # Only a paced peer needs the clock: unpaced chunks are the hot path.
            now = time.monotonic() if bucket is not None else None
            if bucket is not None and bucket.delay(length, now) > 0:
                return False
            if out.next == 0 and out.meta.pop("stamp", False):
                out.meta["sent"] = time.time()
            head = json.dumps({**out.meta, "chunk": out.next, "offset": off}).encode()
            try:
                sock.send_multipart([head, out.view[off:off + length]], copy=False, flags=flags)
            except zmq.Again:
                return False
            if bucket is not None:
                backlog = self._count_paced(peer, out, length, now)
                bucket.take(length, now, backlog=backlog)
            out.next += 1
        return True

    def _count_paced(self, peer, out, nbytes, now):
        m = self.meters[peer]
        if m.last is not None and (out.next > 0 or out.queued_at <= m.last):
            m.bytes += nbytes
            m.seconds += now - m.last
        queue = self.outgoing[peer]
        backlog = out.next + 1 < len(out.chunks) or len(queue) > 1
        m.last = now if backlog else None
        return backlog

    def pump(self, peer):
        """Move queued chunks to peer's socket while it takes them and its
        bucket (if paced) lets them go.  A message none of which has left
        is dropped instead when `obsolete(header)` says it is no longer
        needed (set by whoever sends copies that may be overtaken)."""
        queue = self.outgoing.get(peer)
        while queue:
            head = queue[0]
            if self.obsolete is not None and head.next == 0 and self.obsolete(head.meta):
                queue.popleft()
                self.dropped += 1
                continue
            if self._gated(peer, head):
                queue.put_back()
                return
            if not self._send_chunks(self.dealers[peer], head, block=False, peer=peer):
                return
            queue.popleft()

    def _release_wait(self, peer, now):
        """Seconds until peer's paced queue may release its next chunk, or
        its gated head may be looked at again."""
        bucket = self.buckets.get(peer)
        queue = self.outgoing.get(peer)
        if not queue:
            return 0.0
        if self._gated(peer, queue[0]):
            queue.put_back()
            return GATE_RECHECK
        if bucket is None or not queue[0].chunks:
            return 0.0
        out = queue[0]
        return bucket.delay(out.chunks[out.next][1], now)

    def _gated(self, peer, out):
        """True while a low-priority message, none of it sent, must wait:
        the kernel still holds `low_gate` bytes or more for the peer."""
        if self.low_gate is None or out.priority < 1 or out.next > 0:
            return False
        return self._in_kernel(peer) >= self.low_gate

    def _in_kernel(self, peer):
        """Bytes the kernel holds for peer's connections, sent or not, not yet acknowledged."""
        now = time.monotonic()
        fds, found_at = self._fds.get(peer, ((), -math.inf))
        if not fds and now - found_at > 1.0:       # not connected yet: look again now and then
            fds = tuple(kernel_pacing.connected_to(*self.peers[peer]))
            self._fds[peer] = (fds, now)
        total = 0
        for fd in fds:
            try:
                total += struct.unpack("i", fcntl.ioctl(fd, termios.TIOCOUTQ, b"\0" * 4))[0]
            except OSError:
                self._fds.pop(peer, None)             # closed: found again next time
        return total

    def queue_length(self, peer):
        """Messages waiting for peer, the one being sent included."""
        return len(self.outgoing.get(peer, ()))

    def _heartbeats(self, interval):
        # Its own sockets: ZeroMQ sockets belong to one thread, and a
        # heartbeat must not wait behind a large tensor on the data socket.
        socks = {p: self._dealer(self.name + HEARTBEAT_SUFFIX, h, port, self.hb_ctx)
                 for p, (h, port) in self.peers.items()}
        try:
            while not self._stop.wait(interval):
                for s in socks.values():
                    try:
                        s.send(b"", zmq.NOBLOCK)
                    except zmq.Again:
                        pass
        finally:
            for s in socks.values():
                s.close(0)

    # ----------------------------------------------------------- receiving

    def recv(self, timeout=None, watch=()):
        """The next complete message.  Raises PeerDead if a watched peer has
        been silent too long, RecvTimeout after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            now = time.monotonic()
            wait = 0.2 if deadline is None else max(0.0, min(0.2, deadline - now))
            if self._poll(int(wait * 1000)):
                while True:
                    try:
                        frames = self.router.recv_multipart(zmq.NOBLOCK, copy=False)
                    except zmq.Again:
                        break
                    message = self._take(frames)
                    if message is not None:
                        return message
            # Only after taking what is queued: a process that was not
            # scheduled for a while must not blame peers whose heartbeats
            # are waiting in its own queue.
            self._check_alive(watch, time.monotonic())
            if deadline is not None and time.monotonic() >= deadline:
                raise RecvTimeout(f"nothing received in {timeout:.1f}s")

    def _poll(self, timeout_ms, inbound=True):
        """Wait for input (unless not `inbound`); also feed queued sockets
        that can take more, waking up when a paced chunk is due rather than
        watching a socket its bucket holds back.  True when input is waiting."""
        backlog = [p for p, q in self.outgoing.items() if q]
        if not backlog:
            return bool(self.router.poll(timeout_ms)) if inbound else False
        poller = zmq.Poller()
        if inbound:
            poller.register(self.router, zmq.POLLIN)
        now = time.monotonic()
        held = []
        for p in backlog:
            wait = self._release_wait(p, now)
            if wait > 0:
                held.append(p)
                timeout_ms = min(timeout_ms, math.ceil(wait * 1000))
            else:
                poller.register(self.dealers[p], zmq.POLLOUT)
        if poller.sockets:
            ready = dict(poller.poll(timeout_ms))
        else:
            # Only held queues and no input to watch (a flush): zmq_poll
            # of nothing returns at once, so wait for the next release here.
            time.sleep(timeout_ms / 1000)
            ready = {}
        for p in backlog:
            if p in held or self.dealers[p] in ready:
                self.pump(p)
        return self.router in ready

    def _check_alive(self, watch, now):
        for peer in watch:
            seen = self.last_seen.get(peer)
            silent = now - (seen if seen is not None else self.started)
            limit = self.dead_after if seen is not None else self.first_contact_grace
            if silent > limit:
                raise PeerDead(peer, silent)

    def _take(self, frames):
        now = time.monotonic()
        sender = bytes(frames[0].buffer).decode()
        if sender.endswith(HEARTBEAT_SUFFIX):
            self.last_seen[sender[:-len(HEARTBEAT_SUFFIX)]] = now
            return None
        self.last_seen[sender] = now
        header = json.loads(bytes(frames[1].buffer))
        if header["nchunks"] == 0:
            return Message(sender, header, None, now, now)
        key = (sender, header["msg"])
        part = self._partial.get(key)
        if part is None:
            part = self._partial[key] = _Partial(header, np.empty(header["nbytes"], np.uint8), first=now)
        data = frames[2].buffer
        off = header["offset"]
        part.buf[off:off + len(data)] = np.frombuffer(data, np.uint8)
        part.received += len(data)
        part.chunks += 1
        if part.chunks == 1:
            part.first_bytes = len(data)
        if part.chunks < header["nchunks"]:
            return None
        del self._partial[key]
        self.bytes_received[sender] = self.bytes_received.get(sender, 0) + part.received
        payload = part.buf.view(np.dtype(header["dtype"])).reshape(header["shape"])
        for k in ("chunk", "offset"):
            part.header.pop(k, None)
        if "sent" in part.header:
            part.header["arrived"] = time.time()
        if part.received >= XFER_LOG_MIN_BYTES and part.chunks > 1 and now > part.first:
            # The clock starts when the first chunk is complete, so its bytes
            # are not counted in the goodput.
            self.log("xfer", peer=sender, bytes=part.received, seconds=now - part.first,
                     goodput=(part.received - part.first_bytes) * 8 / (now - part.first))
        return Message(sender, part.header, payload, part.first, now)

    def flush(self, timeout=10.0):
        """Hand every queued message to its socket (queued mode, paced
        peers at their rate), waiting at most `timeout` seconds for peers
        to take them."""
        deadline = time.monotonic() + timeout
        while any(self.outgoing.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._poll(math.ceil(min(0.1, left) * 1000), inbound=False)

    def close(self, drain=True):
        """Close.  With `drain` (a normal end), what is still queued is a
        peer's last model: it must leave before we do, however slow the
        link, and only a peer that stopped reading (dead) makes us wait the
        whole time.  Without (stopped, failed), nothing waits."""
        linger = max(self.dead_after, CLOSE_LINGER) if drain else 0.0
        self.flush(timeout=linger)
        for s in self.dealers.values():
            s.close(linger=int(linger * 1000))
        self.router.close(0)
        self.ctx.term()          # returns once the data has left (or the linger is over)
        self._stop.set()
        self._hb_thread.join(timeout=2)
        self.hb_ctx.term()
