"""Which slice carries each block of one iteration: the planner's
dispatcher (`optimal_policy`, for `agents/dataplane/dispatch`).

At the release, every slice gets `window` blocks, the first slices (the
fastest planned) first.  Each time one of a slice's blocks has reached
every contributor (each tells the dispatcher when its new values arrive),
the slice gets the next block left, so a slice's share follows how fast
its trees run now, up and down (a slice is clocked by its blocks' ends,
as a TCP window by its ACKs).  Clocked by its root's folds alone, a slice
whose reduce tree runs fast took block after block into a broadcast tree
that could not carry them, and finished seconds after the others.

With `tail`, not so at the end: a slice whose last block took r seconds
from its announcement to its last contributor would hold the next block
about r seconds, while the other slices carrying blocks now take p / f
seconds for the p blocks left, f being the blocks a second they end
between them (each the blocks it carries over its own last r).  Where r
is longer, the iteration would wait on that block after the others have
drained the pool, so the slice gets no block now.  The others' rate
counts only slices still carrying blocks, so it falls as slices are left
out, and at every block's end the slices left out are asked again, the
fastest first.  A slice is never left out while no other carries a
block, so every block is given out.  Where the text is silent (its plans
are fixed) we choose this rule; it is the planner's `dispatch_tail`, off
by default (measured in `results/planner-figure/README.md`).

Hand-checked (`tests/unit/test_dispatch.py` plays whole iterations):
with 3 blocks left and the others ending 2 a second, a slice whose last
block took 2 s (more than 1.5 s) is left out, one whose block took 1 s
is not.
"""

import collections


class Dispatch:
    def __init__(self, blocks, slices, window, now=0.0, contributors=1, tail=False):
        self.pool = collections.deque(range(blocks))
        self.contributors = contributors
        self.arrived = collections.Counter()     # block -> contributors its new values reached
        self.tail = tail
        self.sent = {}                       # block -> (slice, when it was announced), until it ends
        self.given = []                      # [block, slice] of every block given out
        self.busy = collections.Counter()    # slice -> blocks it carries now
        self.rounds = {}                     # slice -> seconds its last block took
        self.idle = set()                    # slices left out, asked again at every end
        self.first = []
        for _ in range(window):
            for s in range(slices):
                if self.pool:
                    self.first.append(self._give(s, now))

    def done(self):
        """True once every block is given out."""
        return not self.pool

    def arrived_at_one(self, s, block, now):
        """[[block, slice]] to announce now that the new values of `block`
        (on slice `s`) reached one more contributor."""
        given, at = self.sent.get(block, (None, None))
        if given != s:
            raise ValueError(f"block {block} came down slice {s}, which it was not given")
        self.arrived[block] += 1
        if self.arrived[block] < self.contributors:
            return []
        del self.sent[block], self.arrived[block]
        self.busy[s] -= 1
        self.rounds[s] = now - at
        out = []
        for k in [s] + sorted(self.idle - {s}, key=lambda k: self.rounds[k]):
            if not self.pool:
                break
            if self._left_out(k):
                self.idle.add(k)
            else:
                self.idle.discard(k)
                out.append(self._give(k, now))
        return out

    def _left_out(self, s):
        """Whether the slices carrying blocks now would drain the pool
        before `s` ended one more block."""
        if not self.tail:
            return False
        others = sum(n / self.rounds[k] for k, n in self.busy.items()
                     if k != s and n > 0 and self.rounds.get(k, 0) > 0)
        return others > 0 and self.rounds[s] > len(self.pool) / others

    def _give(self, s, now):
        block = self.pool.popleft()
        self.sent[block] = (s, now)
        self.busy[s] += 1
        self.given.append([block, s])
        return [block, s]
