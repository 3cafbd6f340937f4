"""When each DC pair probes, and how many bytes a train may carry.

One pair sends at a time: the period is cut into equal slots, one per
ordered pair, so trains never collide on a link.  A train lasts about
`train_time` at the pair's estimated rate, but never more than the budget
allows: over a period, every link direction may carry at most `budget`
of its capacity in probe bytes, shared by the pairs whose paths cross it.
"""

import math
from dataclasses import dataclass

FRAME = 1514
MIN_PACKETS = 16
MAX_PACKETS = 2000


@dataclass(frozen=True)
class Pair:
    src: str
    dst: str
    links: tuple     # link directions on the path, e.g. (("a", "b"), ("b", "c"))


def slots(pairs, period):
    """{(src, dst): offset in seconds within the period}."""
    width = period / max(1, len(pairs))
    return {(p.src, p.dst): i * width for i, p in enumerate(pairs)}


def sharing(pairs):
    """{link direction: number of pairs whose path crosses it}."""
    count = {}
    for p in pairs:
        for link in p.links:
            count[link] = count.get(link, 0) + 1
    return count


def train_plan(pair, pairs, rate_estimate, period, budget, train_time):
    """(packets, every): the pair's next train and how many periods apart
    its trains go.  A link too slow for even MIN_PACKETS within the budget
    is probed every few periods instead, so the budget still holds."""
    if rate_estimate is None:
        rate_estimate = MIN_PACKETS * 8 * FRAME / min(train_time, budget * period)
    share = max((sharing(pairs)[link] for link in pair.links), default=1)
    seconds = min(train_time, budget * period / share)
    packets = int(rate_estimate * seconds / (8 * FRAME))
    if packets >= MIN_PACKETS:
        return min(MAX_PACKETS, packets), 1
    every = math.ceil(MIN_PACKETS / max(packets, 1e-9)) if packets else \
        math.ceil(MIN_PACKETS * 8 * FRAME / (rate_estimate * seconds))
    return MIN_PACKETS, every
