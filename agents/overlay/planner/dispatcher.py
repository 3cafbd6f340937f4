"""Which slice carries each block of one iteration: the planner's
dispatcher (`policy`, for `agents/dataplane/dispatch`).

At the release, every slice gets `window` blocks, the first slices (the
fastest planned) first.  Each time one of a slice's blocks has reached
every contributor (each tells the dispatcher when its new values arrive),
the slice gets the next block left, so a slice's share follows how fast
its trees run now, up and down (a slice is clocked by its blocks' ends,
as a TCP window by its ACKs).  Clocked by its root's folds alone, a slice
whose reduce tree runs fast took block after block into a broadcast tree
that could not carry them, and finished seconds after the others.

With `control` (alpha, beta), a slice's window is not fixed but set as
TCP Vegas sets a connection's (Brakmo and Peterson, "TCP Vegas: end to
end congestion avoidance on a global Internet", IEEE JSAC 1995; the
paper's alpha = 1 and beta = 3, in blocks here): once a round trip, a
slice whose last block took r seconds against the least b it has taken
this iteration counts w (1 - b / r) of its w blocks as queued behind
others, and widens its window by one below alpha, narrows it by one
(to no fewer than one) above beta.  Equal windows cap a slice whose trees
run through idle links at w blocks a round trip while links elsewhere
queue; under Vegas such a slice widens until its own links fill, and a
slice queued on a busy link yields, so the bytes move to the trees with
room (Vegas' equilibrium is proportionally fair, Low, Peterson and Wang,
JACM 2002).  Where the text is silent (its plans are fixed) we choose
this; it is the planner's `dispatch: vegas`, with `dispatch_alpha`,
`dispatch_beta` and the widest window `dispatch_window_max`.

Steered (`windows`, then `steer`), no rule of its own sets a window: the
caller gives every slice its window at the start and may give new ones
while the iteration runs; a slice below its new window gets blocks up to
it at once, round robin, the first slices first, and each end refills its
slice to its window (none if it narrowed).  A slice of window 0 gets no
block; the caller keeps one window above 0, so every block is given out.
The planner steers by the rates its slices would have on the probes'
latest readings (`plan.steered_windows`, its `dispatch: steer`).

Hand-checked (`tests/unit/test_dispatch.py` plays whole iterations):
under control, a slice with a window of 2 whose first block took 0.2 s
(none queued) widens to 3 and gets two blocks; one with a window of 6
whose block took 1 s against a least of 0.2 s (4.8 queued) narrows to 5
and, with 5 still out, gets none.
"""

import collections


class Dispatch:
    def __init__(self, blocks, slices, window, now=0.0, contributors=1, control=None, widest=64,
                 windows=None):
        self.pool = collections.deque(range(blocks))
        self.began = now
        self.control = control                # (alpha, beta) of the Vegas rule, or None: fixed windows
        self.widest = widest
        self.window = dict.fromkeys(range(slices), window)
        self.steered = windows is not None   # windows set from outside (`steer`), no rule of their own
        self.least = {}                       # slice -> least round trip of its blocks so far
        self.mark = {}                        # slice -> first block its next adjustment waits for
        self.contributors = contributors
        self.arrived = collections.Counter()     # block -> contributors its new values reached
        self.sent = {}                       # block -> (slice, when it was announced), until it ends
        self.given = []                      # [block, slice] of every block given out
        self.busy = collections.Counter()    # slice -> blocks it carries now
        self.rounds = {}                     # slice -> seconds its last block took
        self.first = []
        if self.steered:
            self.first = self.steer(windows, now)
        else:
            for _ in range(window):
                for s in range(slices):
                    if self.pool:
                        self.first.append(self._give(s, now))

    def steer(self, windows, now):
        """Set every slice's window ([blocks] a slice) and give each slice
        below its new window blocks up to it, round-robin, the first
        slices first: [[block, slice]] to announce now."""
        self.steered = True
        self.window = dict(enumerate(windows))
        out = []
        while self.pool:
            below = [s for s in sorted(self.window) if self.busy[s] < self.window[s]]
            if not below:
                break
            for s in below:
                if self.pool:
                    out.append(self._give(s, now))
        return out

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
        if self.control:
            self._adjust(s, block)
        # Under control or steered, the slice refills to its window (none if it narrowed).
        want = self.window[s] - self.busy[s] if self.control or self.steered else 1
        out = []
        while self.pool and want > 0:
            out.append(self._give(s, now))
            want -= 1
        return out

    def summary(self):
        """Per slice [blocks given, window, least round trip, last round
        trip] (seconds; None where none has ended, and the least only under
        control)."""
        given = collections.Counter(s for _, s in self.given)
        return [[given[s], self.window[s], self.least.get(s), self.rounds.get(s)]
                for s in sorted(self.window)]

    def _adjust(self, s, block):
        """Vegas' rule on slice `s`, whose `block` just ended: once a round
        trip (the first block given after the last change ends)."""
        r = self.rounds[s]
        self.least[s] = min(self.least.get(s, r), r)
        if block < self.mark.get(s, 0) or r <= 0:
            return
        alpha, beta = self.control
        w = self.window[s]
        queued = w * (1 - self.least[s] / r)
        if queued < alpha:
            self.window[s] = min(self.widest, w + 1)
        elif queued > beta:
            self.window[s] = max(1, w - 1)
        self.mark[s] = self.pool[0] if self.pool else float("inf")

    def _give(self, s, now):
        block = self.pool.popleft()
        self.sent[block] = (s, now)
        self.busy[s] += 1
        self.given.append([block, s])
        return [block, s]
