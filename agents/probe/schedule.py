"""When each DC pair probes, and how many bytes a train may carry.

Slots.  Every probe of a run computes the same slot table from the same
settings (a pure function of them), and counts periods from one epoch the
runner hands out, so the probes agree on who sends when without talking.
Pairs whose paths share no link direction probe in the same slot, in
parallel; pairs that share one never do.  Packing is a greedy colouring of
the conflict graph (two pairs conflict when their paths cross a common link
direction): pairs with the most conflicts first, ties in the order given,
each into the first slot where it conflicts with nobody.

Width.  A slot lasts until its slowest train has left every link it crosses,
so the next slot's trains find those links free:

    width = max over the slot's pairs of (train + delay) + MARGIN

* train: how long the train takes through the bottleneck at its planned
  size.  Trains are planned to last `train_time` at the pair's estimated
  rate (the budget may make them shorter), except on a link too slow for
  MIN_PACKETS within that time, where the minimal train lasts longer.
* delay: the path's one-way delay plus its jitter.  A train in this slot
  reaches a link late in its path up to that much after the slot begins,
  while the next slot's train may reach the same link at once (its first
  hop), so the delay must pass as well before the link is free.
* MARGIN: what the numbers above do not show: a probe waking a few
  milliseconds late on a busy machine, a source sending its several trains
  of one slot one after another, and the delay line releasing frames on a
  clock of about a millisecond.

A train planned from an estimate higher than the link's rate (the link just
slowed down) lasts longer than planned and may overlap the next slot for a
period or two, until the estimate follows the change.

Period.  The slots run back to back; when they fit in the configured period
the spare time is shared out in proportion to their widths (more margin),
and otherwise the period stretches to hold them.  The effective period is
what trains, the budget and estimate ageing count with.

Budget.  Over a period, every link direction carries at most `budget` of
its capacity in probe bytes, shared by the pairs whose paths cross it.  A
direction whose estimate holds steady (`Estimator.steady`) is probed on
`steady_budget` instead (by default the same): on a WAN whose links keep
their rates, that leaves the model what the probes would take to re-read
a known rate, while a link that moves is read on the full budget from its
first deviating train until its estimate holds again.  The sender and the
receiver of a direction both go by the estimate the receiver publishes, the
receiver to age it against how often it is read.
"""

import math
from dataclasses import dataclass

FRAME = 1514
MIN_PACKETS = 16
MAX_PACKETS = 2000
MARGIN = 0.025      # seconds
# The receiver times a train by the median rate of stretches of WINDOW
# seconds (the delay line releases frames on a 1 ms clock, so shorter
# stretches are too coarse).  A train of three stretches is the shortest
# whose median one stretch slowed by a busy CPU cannot move.
WINDOW = 0.02
USEFUL_TRAIN = 3 * WINDOW


@dataclass(frozen=True)
class Pair:
    src: str
    dst: str
    links: tuple     # link directions on the path, e.g. (("a", "b"), ("b", "c"))
    delay: float = 0.0      # one-way delay of the path plus its jitter, seconds
    rate: float = None      # configured rate of the path's slowest link direction, bit/s
    queue: float = None     # bytes the queue of the path's first link direction holds


@dataclass(frozen=True)
class Table:
    """The slot table of a run: the same in every probe."""
    period: float           # effective period, seconds
    offsets: dict           # (src, dst) -> start of its slot within the period
    slot_of: dict           # (src, dst) -> slot number
    widths: tuple           # seconds, per slot, as the period holds them

    @property
    def slots(self):
        return len(self.widths)


def conflicts(pairs):
    """[set of indices of the pairs sharing a link direction with pair i]."""
    crossing = {}
    for i, p in enumerate(pairs):
        for link in p.links:
            crossing.setdefault(tuple(link), []).append(i)
    out = [set() for _ in pairs]
    for users in crossing.values():
        for i in users:
            out[i].update(users)
    for i, c in enumerate(out):
        c.discard(i)
    return out


def colour(pairs):
    """[slot number of each pair]: greedy, most conflicts first."""
    graph = conflicts(pairs)
    order = sorted(range(len(pairs)), key=lambda i: (-len(graph[i]), i))
    slot = [None] * len(pairs)
    for i in order:
        taken = {slot[j] for j in graph[i] if slot[j] is not None}
        slot[i] = next(s for s in range(len(pairs) + 1) if s not in taken)
    return slot


def train_bound(pair, train_time):
    """The longest a planned train of the pair lasts at the bottleneck."""
    if not pair.rate:
        return train_time
    return max(train_time, MIN_PACKETS * 8 * FRAME / pair.rate)


def table(pairs, period, train_time):
    """The slot table for `pairs` with a configured `period`."""
    slot = colour(pairs)
    count = max(slot, default=-1) + 1
    need = [0.0] * count
    for p, s in zip(pairs, slot):
        need[s] = max(need[s], train_bound(p, train_time) + p.delay + MARGIN)
    total = sum(need)
    effective = max(period, total)
    scale = effective / total if total else 1.0
    widths = tuple(w * scale for w in need)
    starts = [sum(widths[:s]) for s in range(count)]
    return Table(period=effective,
                 offsets={(p.src, p.dst): starts[s] for p, s in zip(pairs, slot)},
                 slot_of={(p.src, p.dst): s for p, s in zip(pairs, slot)},
                 widths=widths)


def next_round(epoch, period, now):
    """The start of the first period at or after `now`, counting from `epoch`."""
    return epoch + math.ceil(max(0.0, now - epoch) / period - 1e-9) * period


def sharing(pairs):
    """{link direction: number of pairs whose path crosses it}."""
    count = {}
    for p in pairs:
        for link in p.links:
            count[link] = count.get(link, 0) + 1
    return count


def train_plan(pair, pairs, rate_estimate, period, budget, train_time):
    """(packets, every): the pair's next train and how many periods apart
    its trains go.  A train lasts `train_time` at the estimated rate, or
    less where the budget shared on a link says so, but never less than
    the receiver can time (USEFUL_TRAIN, and MIN_PACKETS): when the budget
    of one period is too small for that, the pair probes every few periods
    with a train the budgets of those periods add up to."""
    if rate_estimate is None:
        return MIN_PACKETS, 1          # nothing sizes it yet: a small one, at once
    share = max((sharing(pairs)[link] for link in pair.links), default=1)
    allowed = budget * period / share           # seconds at the rate, per period
    packets = int(rate_estimate * min(train_time, allowed) / (8 * FRAME))
    useful = max(MIN_PACKETS, math.ceil(rate_estimate * min(train_time, USEFUL_TRAIN) / (8 * FRAME)))
    if packets >= useful:
        return min(MAX_PACKETS, packets), 1
    return min(MAX_PACKETS, useful), math.ceil(useful * 8 * FRAME / (rate_estimate * allowed))


def budget_for(estimate, budget, steady_budget):
    """The budget a direction is probed on: `steady_budget` while its
    estimate (as published, or None) holds steady, `budget` otherwise."""
    return steady_budget if estimate and estimate.get("steady") else budget


def fires(pair_slot, every, round_number):
    """Whether a pair probing every `every` periods sends in this round.
    Pairs in different slots fire in different rounds, so the trains of a
    link's pairs (each in a slot of its own) spread over the periods."""
    return (round_number + pair_slot) % every == 0
