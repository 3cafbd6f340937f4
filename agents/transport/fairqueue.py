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

The head, once picked, stays the head until it is removed (its chunks may
be on the wire already, and messages are never interleaved).  It has the
deque operations the transport uses: len, [0] and popleft.
"""

import heapq
import itertools


class FairQueue:
    def __init__(self):
        self._heap = []                 # (start tag, arrival, item)
        self._arrival = itertools.count()
        self._finish = {}               # flow -> finish tag of its last message
        self._head = None
        self._virtual = 0.0

    def append(self, item, flow=None, weight=1.0, size=0):
        if flow is None:
            start = self._virtual
        else:
            if not weight > 0:
                raise ValueError(f"a flow's weight must be above zero, not {weight!r}")
            start = max(self._virtual, self._finish.get(flow, 0.0))
            self._finish[flow] = start + size / weight
        heapq.heappush(self._heap, (start, next(self._arrival), item))

    def _pick(self):
        if self._head is None and self._heap:
            start, _, self._head = heapq.heappop(self._heap)
            self._virtual = max(self._virtual, start)
        return self._head

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
