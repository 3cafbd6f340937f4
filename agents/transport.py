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
"""

import itertools
import json
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import zmq

HEARTBEAT_SUFFIX = "#hb"
# Messages smaller than this are not logged as transfers (control traffic).
XFER_LOG_MIN_BYTES = 64 * 1024


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
    def __init__(self, name, host, port, peers, chunk_bytes=1 << 20, heartbeat_interval=0.5,
                 dead_after=5.0, io_threads=1, log=None, first_contact_grace=60.0, source=None):
        """peers: {name: (host, port)} of everyone this agent talks to.
        A peer never heard from may still be starting, so it is presumed
        dead only after `first_contact_grace` (at least `dead_after`)
        counted from our own start.  `source`, an address of this host,
        is where our own connections leave from (routing may depend on it)."""
        self.source = source
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
        self._hb_thread = threading.Thread(target=self._heartbeats, args=(heartbeat_interval,),
                                           daemon=True)
        self._hb_thread.start()

    def _dealer(self, identity, host, port):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.IDENTITY, identity.encode())
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SNDHWM, 0)
        s.connect(f"tcp://{self.source}:0;{host}:{port}" if self.source else f"tcp://{host}:{port}")
        return s

    # ----------------------------------------------------------- sending

    def send(self, peer, header, payload=None):
        """Send a header and optional numpy array to a peer, in chunks.
        Returns immediately; ZeroMQ moves the bytes.  The array must not be
        changed until the peer has it (callers send fresh arrays)."""
        sock = self.dealers[peer]
        msg = next(self._msg_ids)
        if payload is None:
            sock.send_multipart([json.dumps({**header, "msg": msg, "nchunks": 0}).encode()])
            return
        arr = np.ascontiguousarray(payload)
        view = memoryview(arr).cast("B")
        chunks = split(arr.nbytes, self.chunk_bytes)
        meta = {**header, "msg": msg, "nchunks": len(chunks), "nbytes": arr.nbytes,
                "dtype": arr.dtype.str, "shape": list(arr.shape)}
        for i, (off, length) in enumerate(chunks):
            head = json.dumps({**meta, "chunk": i, "offset": off}).encode()
            sock.send_multipart([head, view[off:off + length]], copy=False)
        self.bytes_sent[peer] = self.bytes_sent.get(peer, 0) + arr.nbytes

    def _heartbeats(self, interval):
        # Its own sockets: ZeroMQ sockets belong to one thread, and a
        # heartbeat must not wait behind a large tensor on the data socket.
        socks = {p: self._dealer(self.name + HEARTBEAT_SUFFIX, h, port)
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
            if self.router.poll(int(wait * 1000)):
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
        if part.received >= XFER_LOG_MIN_BYTES and part.chunks > 1 and now > part.first:
            # The clock starts when the first chunk is complete, so its bytes
            # are not counted in the goodput.
            self.log("xfer", peer=sender, bytes=part.received, seconds=now - part.first,
                     goodput=(part.received - part.first_bytes) * 8 / (now - part.first))
        return Message(sender, part.header, payload, part.first, now)

    def close(self):
        self._stop.set()
        self._hb_thread.join(timeout=2)
        for s in self.dealers.values():
            s.close(linger=2000)  # let goodbyes already queued reach their peers
        self.router.close(0)
        self.ctx.term()
