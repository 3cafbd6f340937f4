"""A peer's send queue that shares the connection among flows by weight:
start-time fair queuing (Goyal, Vin and Cheng, "Start-time Fair Queueing",
SIGCOMM 1996).

A message of flow f and size L that arrives when the virtual time is V
gets the start tag S = max(V, F_f) and moves f's finish tag to
F_f = S + L / w_f; the next message to send is the one with the smallest
start tag (ties in arrival order), and V becomes its tag.  So flows that
stay backlogged get the connection in proportion to their weights, and a
flow that was idle starts again at once, without credit for the idle time.
A message with no flow is tagged V: it goes after those already due.

Priorities are strict and come before the tags: no message of a higher
`priority` number leaves while one of a lower number waits (a copy that
only helps when the connection would be idle goes at a higher number).
Each priority keeps its own virtual time, so serving a low priority does
not move the tags of a higher one.

The head, once picked, stays the head until it is removed (its chunks may
be on the wire already, and messages are never interleaved) or put back
before any of it has left.  It has the
deque operations the transport uses: len, [0] and popleft, and put_back.
"""

import heapq
import itertools


class FairQueue:
    def __init__(self):
        self._heap = []                 # (priority, start tag, arrival, item)
        self._arrival = itertools.count()
        self._finish = {}               # (priority, flow) -> finish tag of its last message
        self._head = None
        self._virtual = {}              # priority -> its virtual time

    def append(self, item, flow=None, weight=1.0, size=0, priority=0):
        virtual = self._virtual.get(priority, 0.0)
        if flow is None:
            start = virtual
        else:
            if not weight > 0:
                raise ValueError(f"a flow's weight must be above zero, not {weight!r}")
            start = max(virtual, self._finish.get((priority, flow), 0.0))
            self._finish[(priority, flow)] = start + size / weight
        heapq.heappush(self._heap, (priority, start, next(self._arrival), item))

    def _pick(self):
        if self._head is None and self._heap:
            self._head_key = heapq.heappop(self._heap)
            priority, start, _, self._head = self._head_key
            self._virtual[priority] = max(self._virtual.get(priority, 0.0), start)
        return self._head

    def put_back(self):
        """Return the head, none of which has left, to its place: what
        arrives before the next pick may go first."""
        if self._head is not None:
            heapq.heappush(self._heap, self._head_key)
            self._head = None

    def __len__(self):
        return len(self._heap) + (self._head is not None)

    def __bool__(self):
        return len(self) > 0

    def __getitem__(self, index):
        if index != 0 or not self:
            raise IndexError("only the head of a fair queue can be read")
        return self._pick()

    def popleft(self):
        item = self[0]
        self._head = None
        return item
