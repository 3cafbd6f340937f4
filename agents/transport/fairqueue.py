"""A peer's send queue that shares the connection among flows by weight:
start-time fair queuing (Goyal, Vin and Cheng, "Start-time Fair Queueing",
SIGCOMM 1996).

A message of flow f and size L that arrives when the virtual time is V
gets the start tag S = max(V, F_f) and moves f's finish tag to
F_f = S + L / w_f; the next message to send is the one with the smallest
start tag (ties in arrival order), and V becomes its tag; when the queue
empties, V becomes the largest finish tag served (the paper's end of a
busy period).  So flows that stay backlogged get the connection in
proportion to their weights, and a flow that was idle starts again at
once, without credit for the idle time.  A message with no flow is
tagged V: it goes after those already due.

A flow's finish tag is forgotten once V has passed it: its next message
would start at V anyway.  So the map of finish tags holds the flows still
ahead of V, not every flow ever seen (each re-plan names new ones).

The head, once picked, stays the head until it is removed (its chunks may
be on the wire already, and messages are never interleaved).  It has the
deque operations the transport uses: len, [0] and popleft.
"""

import heapq
import itertools

# The finish tags are swept when they are this many more than after the last sweep.
SWEEP_AFTER = 64


class FairQueue:
    def __init__(self):
        self._heap = []                 # (start tag, arrival, finish tag, item)
        self._arrival = itertools.count()
        self._finish = {}               # flow -> finish tag of its last message
        self._sweep_at = SWEEP_AFTER
        self._head = None               # (finish tag, item) of the message being sent
        self._served = 0.0              # the largest finish tag served in this busy period
        self._virtual = 0.0

    def append(self, item, flow=None, weight=1.0, size=0):
        if flow is None:
            start = finish = self._virtual
        else:
            if not weight > 0:
                raise ValueError(f"a flow's weight must be above zero, not {weight!r}")
            start = max(self._virtual, self._finish.get(flow, 0.0))
            finish = self._finish[flow] = start + size / weight
            if len(self._finish) > self._sweep_at:
                self._sweep()
        heapq.heappush(self._heap, (start, next(self._arrival), finish, item))

    def _sweep(self):
        """Forget the finish tags V has passed: max(V, F) is V for them."""
        self._finish = {f: t for f, t in self._finish.items() if t > self._virtual}
        self._sweep_at = 2 * len(self._finish) + SWEEP_AFTER

    def _pick(self):
        if self._head is None and self._heap:
            start, _, finish, item = heapq.heappop(self._heap)
            self._head = (finish, item)
            self._virtual = max(self._virtual, start)
        return None if self._head is None else self._head[1]

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
        self._served = max(self._served, self._head[0])
        self._head = None
        if not self._heap:
            # The end of a busy period: every finish tag is now behind V.
            self._virtual = max(self._virtual, self._served)
            self._sweep()
        return item
