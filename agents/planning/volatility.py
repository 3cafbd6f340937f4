"""How long a WAN's link rates hold, against how long a plan runs.

A plan takes over only at an iteration boundary and then runs to the next
one, so it is only as good as the rates during the iteration after it was
made.  Where a link's rate holds for several iterations, its latest
estimate predicts them; where it changes within one (NetStorm's dynamic
WAN redrawn every 10 s under synchronizations of 13-28 s), the latest
estimate is stale before the plan made on it has run, and chasing it
re-plans every iteration onto rates already gone.

`Holding` counts, per link direction, the steps of its estimate: a move of
more than `step` (relative) from the level it last settled at.  A link's
hold time is `window` divided by its steps in the last `window` seconds,
even while it has been watched for less: counted over the time watched,
the one step of a link's first estimates settling made a steady WAN look
volatile in its first seconds (ps-scaling, 13 s into a run).  The WAN's
hold time is the median over links (a few links that step often do not
make a WAN volatile, and one link gone wrong is the re-planning's job).
The WAN is volatile while that median is shorter than `iterations` times
an iteration's duration: a plan made now would not outlast the rates it
was made on.  Where the text is silent (the planner's own rule) we choose
this test; `step`, `window` and `iterations` are parameters.

Hand-checked: one link stepping every 10 s over a 60 s window holds 10 s;
with iterations of 15 s and `iterations` = 2 that is volatile (10 < 30),
with one step in the window (60 s) it is not.
"""

import statistics


class Holding:
    def __init__(self, step, window, iterations):
        self.step, self.window, self.iterations = step, window, iterations
        self.level = {}            # link -> the estimate it last settled at
        self.steps = {}            # link -> [times it stepped]

    def observe(self, now, estimates):
        """Take the links' estimates at `now` ({link: rate})."""
        for link, rate in estimates.items():
            if not rate:
                continue
            level = self.level.get(link)
            if level is None:
                self.level[link] = rate
                self.steps[link] = []
            elif abs(rate - level) / level > self.step:
                self.level[link] = rate
                self.steps[link].append(now)
            times = self.steps[link]
            while times and now - times[0] > self.window:
                times.pop(0)

    def hold(self, now):
        """Median over links of seconds per step (inf for a link that has
        not stepped in the window); None before any link is seen."""
        holds = []
        for times in self.steps.values():
            recent = [t for t in times if now - t <= self.window]
            holds.append(self.window / len(recent) if recent else float("inf"))
        return statistics.median(holds) if holds else None

    def volatile(self, now, iteration):
        """Whether rates hold for less than `iterations` iterations of
        `iteration` seconds (False while either is unknown)."""
        hold = self.hold(now)
        return hold is not None and iteration is not None and hold < self.iterations * iteration
