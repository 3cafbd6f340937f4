"""Machine: one host of a search's cluster.  It plays every job role placed
on it (a parameter server, workers) by moving the bytes of the flows the
scheduler starts, at the rates the scheduler sets, and tells the
scheduler when a flow it receives is complete.

Messages:
  from the scheduler
    send   flow, dst, bytes, rate, gate   start a flow; rate None: unpaced, 0: hold
    rates  rates [[flow, rate], ...]      new rates of flows this machine sends
    end                                   the search is over
  between machines
    data   flow, chunk, chunks            one chunk of a flow (synthetic bytes)
  to the scheduler
    arrived  flow, bytes, first, last, rate   every chunk of a flow is here
    progress sent [[flow, bytes], ...]        what each flow it sends has sent,
                                              every PROGRESS_EVERY s while it has some

A flow goes out chunk by chunk: a chunk is handed to the transport only
when the flow's own token bucket allows it at its rate (none while the
rate is 0), its gate allows it and the peer's queue holds fewer than
QUEUED_CHUNKS, so a new rate acts within a chunk or two and flows that
share a peer each keep theirs; the transport paces each peer at the sum
of its flows' rates.  A gated flow
(a PS's pull) sends chunk k only once chunk k of every gating flow (the
pushes of its coflow) has arrived here: the PS returns each part of the
model as soon as all workers' parts of it are in, as the data plane does.
"""

import time

import numpy as np

from agents.roles.compose import endpoint
from agents.transport.pacing import TokenBucket
from agents.transport import PACE_CATCH_UP, RecvTimeout

QUEUED_CHUNKS = 2
IDLE_WAIT = 0.2       # seconds a machine with nothing to send waits for a message
BUSY_WAIT = 0.002     # ... and one that waits for room in a peer's queue
# How often the scheduler hears what each flow has sent: its estimates of
# bytes left drift from the truth by the rate error times this.
PROGRESS_EVERY = 0.1


class _Outgoing:
    """A flow this machine sends, with a token bucket of its own so that
    flows sharing a peer each keep their rate."""

    def __init__(self, fid, dst, nbytes, gate, chunk_bytes):
        self.fid, self.dst, self.gate = fid, dst, tuple(gate)
        self.nbytes = nbytes
        self.sizes = [min(chunk_bytes, nbytes - a) for a in range(0, nbytes, chunk_bytes)] or [0]
        self.chunk_bytes = chunk_bytes
        self.next = 0
        self.rate = 0.0
        self.bucket = None

    def set_rate(self, rate, now):
        """bytes/s; None: unpaced, 0: hold."""
        self.rate = rate
        if not rate:
            self.bucket = None
        elif self.bucket is None:
            self.bucket = TokenBucket(rate * 8, self.chunk_bytes, now, catch_up=PACE_CATCH_UP)
        else:
            self.bucket.set_rate(rate * 8, now)

    def wait(self, now):
        """Seconds until the next chunk may go as far as the rate goes."""
        return 0.0 if self.rate is None else self.bucket.delay(self.sizes[self.next], now)

    def done(self):
        return self.next >= len(self.sizes)

    def sent(self):
        """Bytes handed to the transport so far (every chunk but the last is whole)."""
        return min(self.next * self.chunk_bytes, self.nbytes)


class _Incoming:
    def __init__(self, chunks, now):
        self.chunks = chunks
        self.got = 0
        self.bytes = 0
        self.first = now
        self.arrivals = []        # (time, bytes so far) per chunk

    def take(self, nbytes, now):
        self.got += 1
        self.bytes += nbytes
        self.arrivals.append((now, self.bytes))

    def rate(self):
        """Bytes/s: the least-squares slope of bytes received against time,
        so one late or early chunk barely moves it; None under 3 chunks."""
        if len(self.arrivals) < 3:
            return None
        n = len(self.arrivals)
        mt = sum(t for t, _ in self.arrivals) / n
        mb = sum(b for _, b in self.arrivals) / n
        var = sum((t - mt) ** 2 for t, _ in self.arrivals)
        return sum((t - mt) * (b - mb) for t, b in self.arrivals) / var if var > 0 else None


def run(cfg, log):
    ep = endpoint(cfg, log, queued=True)
    scheduler = cfg.coordinator.name
    chunk_bytes = int(cfg.transport.chunk_bytes)
    zeros = np.zeros(chunk_bytes, np.uint8)
    outgoing = {}        # flow -> _Outgoing
    incoming = {}        # flow -> _Incoming
    arrived_chunks = {}  # flow -> chunks of it received here (for gates)
    peer_rates = {}
    log("start", role="machine", dc=cfg.dc)
    finished = False
    try:
        ended = False
        wait = IDLE_WAIT
        report_at = time.monotonic() + PROGRESS_EVERY
        while not ended:
            try:
                m = ep.recv(timeout=wait)
            except RecvTimeout:
                m = None
            if m is not None:
                h = m.header
                kind = h.get("type")
                if kind == "send":
                    o = outgoing[h["flow"]] = _Outgoing(h["flow"], h["dst"], int(h["bytes"]),
                                                        h.get("gate", ()), chunk_bytes)
                    o.set_rate(h["rate"], time.monotonic())
                elif kind == "rates":
                    for fid, rate in h["rates"]:
                        if fid in outgoing:
                            outgoing[fid].set_rate(rate, time.monotonic())
                elif kind == "data":
                    now = time.monotonic()
                    inc = incoming.setdefault(h["flow"], _Incoming(h["chunks"], now))
                    inc.take(m.payload.nbytes, now)
                    arrived_chunks[h["flow"]] = inc.got
                    if inc.got == inc.chunks:
                        ep.send(scheduler, {"type": "arrived", "flow": h["flow"], "bytes": inc.bytes,
                                            "first": inc.first, "last": now, "rate": inc.rate()})
                        del incoming[h["flow"]]
                elif kind == "end":
                    ended = True
                else:
                    raise RuntimeError(f"{m.sender} sent a {kind} message to a machine")
            _pace(ep, outgoing, peer_rates)
            wait = IDLE_WAIT
            now = time.monotonic()
            if now >= report_at:
                if outgoing:
                    ep.send(scheduler, {"type": "progress",
                                        "sent": [[o.fid, o.sent()] for o in outgoing.values()]})
                report_at = now + PROGRESS_EVERY
            wait = min(wait, max(0.0, report_at - now))
            for o in list(outgoing.values()):
                while not o.done() and o.rate != 0 and \
                        all(arrived_chunks.get(g, 0) > o.next for g in o.gate):
                    if ep.queue_length(o.dst) >= QUEUED_CHUNKS:
                        wait = min(wait, BUSY_WAIT)
                        break
                    due = o.wait(now)
                    if due > 0:
                        wait = min(wait, due)
                        break
                    if o.bucket is not None:
                        # Backlogged when the chunk after this one may follow
                        # as soon as its tokens allow (its gates are open).
                        more = o.next + 1 < len(o.sizes) and \
                            all(arrived_chunks.get(g, 0) > o.next + 1 for g in o.gate)
                        o.bucket.take(o.sizes[o.next], now, backlog=more)
                    ep.send(o.dst, {"type": "data", "flow": o.fid, "chunk": o.next,
                                    "chunks": len(o.sizes)}, zeros[:o.sizes[o.next]])
                    o.next += 1
                # A flow that has handed over its last chunk keeps its share
                # of the peer's pace until the peer's queue is empty: its
                # chunks may still be in it.
                if o.done() and not ep.queue_length(o.dst):
                    del outgoing[o.fid]
        log("done", bytes_out=sum(ep.bytes_sent.values()), bytes_in=sum(ep.bytes_received.values()))
        finished = True
    finally:
        ep.close(drain=finished)


def _pace(ep, outgoing, peer_rates):
    """Each peer paced at the sum of the rates of the flows to it that
    still send or may have chunks in its queue (None when any of them is
    unpaced); a peer none of whose flows may send keeps its pace while its
    queue drains."""
    want = {}
    for o in outgoing.values():
        if o.rate == 0:
            continue
        if o.rate is None or want.get(o.dst, 0.0) is None:
            want[o.dst] = None
        else:
            want[o.dst] = want.get(o.dst, 0.0) + o.rate
    for peer in set(peer_rates) | set(want):
        rate = want.get(peer, 0.0)
        if rate == 0.0 and ep.queue_length(peer):
            # Every flow to it was stopped: what is already queued drains at
            # the pace it was queued at, not in a burst at the NIC's rate
            # into capacity the scheduler has just given to others.
            continue
        if peer_rates.get(peer, 0.0) != rate:
            # Bytes per second here; the transport takes bits per second.  Its
            # burst of two chunks lets the flows' own buckets set the pace, the
            # transport only keeping the sum from being exceeded.
            ep.set_rate(peer, rate * 8 if rate else None, burst=QUEUED_CHUNKS * ep.chunk_bytes)
            peer_rates[peer] = rate
