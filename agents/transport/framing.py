"""How a message travels: a JSON header plus a tensor payload, cut into
chunks of `chunk_bytes`, each chunk a two-frame ZeroMQ message [header,
bytes]; the receiver puts the chunks back together into one buffer."""

import json
import time
from dataclasses import dataclass, field

import numpy as np

# Messages smaller than this are not logged as transfers (control traffic).
XFER_LOG_MIN_BYTES = 64 * 1024


@dataclass
class Message:
    sender: str
    header: dict
    payload: np.ndarray = None       # None for header-only messages
    first: float = 0.0               # monotonic time the first chunk arrived
    last: float = 0.0                # ... and the last one


def split(nbytes, chunk_bytes):
    """[(offset, length)] chunks covering nbytes; one empty chunk for 0 bytes."""
    if nbytes == 0:
        return [(0, 0)]
    return [(off, min(chunk_bytes, nbytes - off)) for off in range(0, nbytes, chunk_bytes)]


@dataclass
class Outgoing:
    """A message on its way out: its header, its bytes and the chunks not
    yet handed to the socket."""
    meta: dict
    view: memoryview
    chunks: list
    next: int = 0
    queued_at: float = 0.0           # monotonic time it entered a queue

    @classmethod
    def of(cls, header, msg_id, payload, chunk_bytes):
        if payload is None:
            return cls({**header, "msg": msg_id, "nchunks": 0}, None, [])
        arr = np.ascontiguousarray(payload)
        chunks = split(arr.nbytes, chunk_bytes)
        meta = {**header, "msg": msg_id, "nchunks": len(chunks), "nbytes": arr.nbytes,
                "dtype": arr.dtype.str, "shape": list(arr.shape)}
        return cls(meta, memoryview(arr).cast("B"), chunks)

    @property
    def nbytes(self):
        return 0 if self.view is None else self.view.nbytes

    def head_of(self, index):
        """The header frame of chunk `index`; the first chunk of a message
        that asks for `stamp` carries the wall-clock time it leaves."""
        if index == 0 and self.meta.pop("stamp", False):
            self.meta["sent"] = time.time()
        off = self.chunks[index][0]
        return json.dumps({**self.meta, "chunk": index, "offset": off}).encode()


@dataclass
class _Partial:
    header: dict
    buf: np.ndarray
    received: int = 0
    chunks: int = 0
    first: float = field(default_factory=time.monotonic)
    first_bytes: int = 0     # the first chunk arrived whole at `first`


class Reassembler:
    """Chunks in, whole messages out; every message of XFER_LOG_MIN_BYTES
    or more in several chunks is timed from its first chunk to its last and
    logged as an `xfer` event (a passive goodput measurement: the clock
    starts when the first chunk is complete, so its bytes do not count)."""

    def __init__(self, log):
        self.log = log
        self.partial = {}
        self.bytes_received = {}

    def take(self, sender, frames, now):
        """The whole Message once its last chunk is in, else None."""
        header = json.loads(bytes(frames[1].buffer))
        if header["nchunks"] == 0:
            return Message(sender, header, None, now, now)
        key = (sender, header["msg"])
        part = self.partial.get(key)
        if part is None:
            part = self.partial[key] = _Partial(header, np.empty(header["nbytes"], np.uint8), first=now)
        data = frames[2].buffer
        off = header["offset"]
        part.buf[off:off + len(data)] = np.frombuffer(data, np.uint8)
        part.received += len(data)
        part.chunks += 1
        if part.chunks == 1:
            part.first_bytes = len(data)
        if part.chunks < header["nchunks"]:
            return None
        del self.partial[key]
        self.bytes_received[sender] = self.bytes_received.get(sender, 0) + part.received
        payload = part.buf.view(np.dtype(header["dtype"])).reshape(header["shape"])
        for k in ("chunk", "offset"):
            part.header.pop(k, None)
        if "sent" in part.header:
            part.header["arrived"] = time.time()
        if part.received >= XFER_LOG_MIN_BYTES and part.chunks > 1 and now > part.first:
            self.log("xfer", peer=sender, bytes=part.received, seconds=now - part.first,
                     goodput=(part.received - part.first_bytes) * 8 / (now - part.first))
        return Message(sender, part.header, payload, part.first, now)
