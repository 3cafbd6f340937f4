"""ZeroMQ transport between agents: a JSON header plus a tensor payload.

Every agent binds one ROUTER socket and reaches each peer through a DEALER
socket of its own (identity = its name), so each ordered pair of agents has
its own TCP connection.  Messages travel in chunks (`framing`).

The transport knows nothing about algorithms.  It counts bytes per peer,
times every received message as a passive goodput measurement (`framing`),
and tells a dead peer from a slow one (`liveness`).

Queued mode (`queued=True`, for overlays that route by backlog): each
peer's socket holds at most one chunk (send high-water mark 1, a small
kernel send buffer) and the rest waits in the peer's `Outbox`, so
`queue_length(peer)` is the real backlog towards that peer.  A message
whose header asks for `stamp` gets the wall-clock time its first chunk
left that queue as `sent`, and the receiver adds `arrived` when its last
chunk is in: a one-way transfer time free of the time it queued.

Pacing (`set_rate(peer, bits_per_s)`, for coflow schedulers and planners
that give each sender a rate per peer): a paced peer's messages wait in
its outbox in either mode, and a token bucket decides when the next chunk
may leave (`outbox`).  Nothing sleeps: the receive loop wakes up when the
next chunk is due, so an agent keeps receiving while its paced data waits.
`paced(peer)` is the rate achieved.
"""

import itertools
import json
import math
import time

import zmq

from agents import config
from agents.transport.framing import Outgoing, Reassembler
from agents.transport.liveness import Heartbeats, check_alive, heartbeat_of
from agents.transport.outbox import Outbox, PaceMeter

# Kernel send buffer of a queued socket: small, so the backlog stays in the
# application queue where it can be seen.
QUEUED_SNDBUF = 256 * 1024
# Seconds a closing endpoint waits, at most, for its queued messages to leave.
CLOSE_LINGER = 60.0


class RecvTimeout(RuntimeError):
    pass


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
        self.outboxes = {}            # peer -> Outbox (queued mode, paced peers)
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
        self.incoming = Reassembler(self.log)
        self.incoming.bytes_received = {p: 0 for p in self.peers}
        self.last_seen = {}
        self.started = time.monotonic()
        self.bytes_sent = {p: 0 for p in self.peers}
        self.heartbeat_interval = heartbeat_interval or config.heartbeat_interval(dead_after)
        self.heartbeats = Heartbeats(name, self.peers, self.heartbeat_interval, self._dealer)

    @property
    def bytes_received(self):
        return self.incoming.bytes_received

    def _dealer(self, identity, host, port, ctx=None, tos=None):
        s = (ctx or self.ctx).socket(zmq.DEALER)
        s.setsockopt(zmq.IDENTITY, identity.encode())
        s.setsockopt(zmq.LINGER, 0)
        if tos is not None:
            s.setsockopt(zmq.TOS, tos)
        if self.queued:
            s.setsockopt(zmq.SNDHWM, 1)
            s.setsockopt(zmq.SNDBUF, QUEUED_SNDBUF)
        else:
            s.setsockopt(zmq.SNDHWM, 0)
        s.connect(f"tcp://{self.source}:0;{host}:{port}" if self.source else f"tcp://{host}:{port}")
        return s

    # ----------------------------------------------------------- sending

    def send(self, peer, header, payload=None, flow=None, weight=1.0):
        """Send a header and optional numpy array to a peer, in chunks.
        Returns immediately; ZeroMQ moves the bytes.  The array must not be
        changed until the peer has it (callers send fresh arrays).  Where
        messages wait in the peer's outbox (queued mode, paced peers), those
        of different `flow`s share the connection in proportion to their
        `weight` (agents.transport.fairqueue); without a flow they keep
        their order."""
        sock = self.dealers[peer]
        out = Outgoing.of(header, next(self._msg_ids), payload, self.chunk_bytes)
        if payload is not None:
            self.bytes_sent[peer] = self.bytes_sent.get(peer, 0) + out.nbytes
        box = self.outboxes.setdefault(peer, Outbox())
        if not self.queued and box.bucket is None and not box:
            self._send_chunks(sock, out, block=True)
            return
        out.queued_at = time.monotonic()
        box.append(out, flow, weight)
        if len(box) == 1:
            self.pump(peer)

    def set_rate(self, peer, bits_per_s, burst=None):
        """Pace what goes to peer to bits_per_s of payload (None or 0:
        unpaced), from now on, what is queued included.  burst: bytes that
        may go at once when pacing starts, one chunk unless given."""
        if peer not in self.dealers:
            raise KeyError(f"no peer {peer!r}")
        box = self.outboxes.setdefault(peer, Outbox())
        box.set_rate(bits_per_s, burst or self.chunk_bytes, time.monotonic())
        self.pump(peer)

    def rate(self, peer):
        """The rate peer is paced to in bit/s, None when unpaced."""
        box = self.outboxes.get(peer)
        return box.bucket.rate if box is not None and box.bucket is not None else None

    def paced(self, peer):
        """(payload bytes, seconds) released to peer while paced and
        backlogged; their ratio is the rate achieved.  Cumulative: callers
        take differences for an interval."""
        box = self.outboxes.get(peer)
        m = box.meter if box is not None and box.meter is not None else PaceMeter()
        return m.bytes, m.seconds

    def _send_chunks(self, sock, out, block, box=None):
        """Send out's chunks from its next one on; False when the socket is
        full (queued mode) or the peer's bucket holds the next chunk back."""
        flags = 0 if block else zmq.NOBLOCK
        if not out.chunks:
            try:
                sock.send_multipart([json.dumps(out.meta).encode()], flags=flags)
            except zmq.Again:
                return False
            return True
        paced = box is not None and box.bucket is not None
        while out.next < len(out.chunks):
            off, length = out.chunks[out.next]
            # Only a paced peer needs the clock: unpaced chunks are the hot path.
            now = time.monotonic() if paced else None
            if paced and box.held(out, length, now):
                return False
            head = out.head_of(out.next)
            try:
                sock.send_multipart([head, out.view[off:off + length]], copy=False, flags=flags)
            except zmq.Again:
                return False
            if paced:
                box.released(out, length, now)
            out.next += 1
        return True

    def pump(self, peer):
        """Move queued chunks to peer's socket while it takes them and its
        bucket (if paced) lets them go."""
        box = self.outboxes.get(peer)
        while box:
            if not self._send_chunks(self.dealers[peer], box.queue[0], block=False, box=box):
                return
            box.queue.popleft()

    def queue_length(self, peer):
        """Messages waiting for peer, the one being sent included."""
        box = self.outboxes.get(peer)
        return len(box) if box is not None else 0

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
            check_alive(watch, self.last_seen, self.started, self.dead_after,
                        self.first_contact_grace, time.monotonic())
            if deadline is not None and time.monotonic() >= deadline:
                raise RecvTimeout(f"nothing received in {timeout:.1f}s")

    def _poll(self, timeout_ms, inbound=True):
        """Wait for input (unless not `inbound`); also feed queued sockets
        that can take more, waking up when a paced chunk is due rather than
        watching a socket its bucket holds back.  True when input is waiting."""
        backlog = [p for p, box in self.outboxes.items() if box]
        if not backlog:
            return bool(self.router.poll(timeout_ms)) if inbound else False
        poller = zmq.Poller()
        if inbound:
            poller.register(self.router, zmq.POLLIN)
        now = time.monotonic()
        held = []
        for p in backlog:
            wait = self.outboxes[p].release_wait(now)
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

    def _take(self, frames):
        now = time.monotonic()
        sender = bytes(frames[0].buffer).decode()
        beating = heartbeat_of(sender)
        if beating is not None:
            self.last_seen[beating] = now
            return None
        self.last_seen[sender] = now
        return self.incoming.take(sender, frames, now)

    def flush(self, timeout=10.0):
        """Hand every queued message to its socket (queued mode, paced
        peers at their rate), waiting at most `timeout` seconds for peers
        to take them."""
        deadline = time.monotonic() + timeout
        while any(self.outboxes.values()):
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
        self.heartbeats.stop()

