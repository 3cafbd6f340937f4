"""Runs an executor node over the transport: hands its messages to the
Endpoint, feeds it what arrives, and measures what moved.

The node is an ExecutorNode (agents/dataplane/node.py): a TreeNode, or a
dynamic overlay's own; this loop is the only place where it meets
sockets.  Each piece received from a peer is timed from its first to its
last segment and logged as an `xfer` event (the passive goodput
measurement the probes and the coordinator use): the clock starts when
the first segment is complete, so its bytes do not count.

A node that `traces_pieces()` also logs, at the end of each iteration,
one `pieces` event: when it began the iteration, and for every piece and
every peer that sent this node any of it (partial sums up, new values
down), when its first and its last segment arrived (monotonic seconds:
one clock for every namespace) and how many there were, with what the
node's `trace_fields(it)` adds (the plan's version).  Laid side by side,
the nodes' rows show where a piece waited on its way up and down the
trees.
"""

import time

from agents.dataplane.node import overrides
from agents.transport import XFER_LOG_MIN_BYTES, RecvTimeout


class _Transfer:
    __slots__ = ("first", "first_bytes", "bytes", "segments")

    def __init__(self, now, nbytes):
        self.first = now
        self.first_bytes = nbytes
        self.bytes = 0
        self.segments = 0


class DataPlane:
    def __init__(self, endpoint, node, log, segments_of=None, side=None):
        """segments_of(piece) -> how many segments make one transfer of it.
        side: {message type: handler(message)} for messages that are not
        the executor's (a sync scheme's talk with the coordinator), which
        may arrive in the middle of an iteration."""
        self.ep = endpoint
        self.node = node
        self.log = log
        self.segments_of = segments_of
        self.side = dict(side or {})
        self.transfers = {}
        # The hooks the node brings, looked up once (send is the hot path): rates per
        # connection, the next hop by backlog, a share of a connection per flow.
        self.take_rates = node.take_rates if overrides(node, "take_rates") else None
        self.route = node.route if overrides(node, "route") else None
        self.flow_of = node.flow_of if overrides(node, "flow_of") else None
        self.traced = {} if node.traces_pieces() else None   # it -> {(piece, kind, sender): row}

    def send(self, messages):
        if self.take_rates is not None:         # rates first, then what they pace
            rates = self.take_rates()
            for peer, bits_per_s in rates.items():
                self.ep.set_rate(peer, bits_per_s or None)
            if rates:
                self.log("pace", rates=rates)
        for dst, header, payload in messages:
            if self.route is not None:
                dst, header = self.route(dst, header, self.ep.queue_length)
            flow, weight = self.flow_of(header) if self.flow_of is not None else (None, 1.0)
            self.ep.send(dst, header, payload, flow=flow, weight=weight)

    def iteration(self, it, contribution=None, stop=False):
        """Play this node's part in iteration `it`.  Returns (new model or
        None, stop, latest contributor start, first new-value arrival)."""
        started = time.monotonic()
        self.send(self.node.start(it, contribution, stop, started))
        first_down = None
        while not self.node.done(it):
            m = self.ep.recv(watch=self.node.upstream())
            if m.header.get("type") == "dist" and m.header.get("it") == it and first_down is None:
                first_down = m.last
            self._take(m)
        if self.traced is not None:
            rows = self.traced.pop(it, {})
            self.log("pieces", it=it, began=started, ended=time.monotonic(), **self.node.trace_fields(it),
                     rows=[[piece, kind, sender, *row]
                           for (piece, kind, sender), row in sorted(rows.items())])
        values, stop, last_started = self.node.result(it)
        return values, stop, last_started, first_down

    def poll(self, timeout=0.0, watch=()):
        """Between iterations: take what has arrived within `timeout`
        seconds (a child's early partial sum, a side message).  True when
        something came."""
        try:
            m = self.ep.recv(timeout=timeout, watch=watch)
        except RecvTimeout:
            return False
        self._take(m)
        while True:
            try:
                m = self.ep.recv(timeout=0, watch=watch)
            except RecvTimeout:
                return True
            self._take(m)

    def _take(self, m):
        handler = self.side.get(m.header.get("type"))
        if handler is not None:
            handler(m)
            return
        self._account(m)
        if self.traced is not None and "piece" in m.header:
            self._trace(m)
        self.send(self.node.on_message(m.sender, m.header, m.payload))

    def _trace(self, m):
        h = m.header
        rows = self.traced.setdefault(h["it"], {})
        row = rows.get((h["piece"], h["type"], m.sender))
        if row is None:
            rows[(h["piece"], h["type"], m.sender)] = [m.last, m.last, 1]
        else:
            row[1] = m.last
            row[2] += 1

    def close(self, drain=True):
        self.ep.close(drain)

    def _account(self, m):
        if m.payload is None or self.segments_of is None or "piece" not in m.header:
            return
        key = (m.sender, m.header["type"], m.header["it"], m.header["piece"])
        t = self.transfers.get(key)
        if t is None:
            t = self.transfers[key] = _Transfer(m.last, m.payload.nbytes)
        t.bytes += m.payload.nbytes
        t.segments += 1
        if t.segments < self.segments_of(m.header["piece"]):
            return
        del self.transfers[key]
        seconds = m.last - t.first
        if t.bytes >= XFER_LOG_MIN_BYTES and t.segments > 1 and seconds > 0:
            self.log("xfer", peer=m.sender, bytes=t.bytes, seconds=seconds,
                     goodput=(t.bytes - t.first_bytes) * 8 / seconds)
