"""The lower bound of each synchronization of a run, on the WAN as it was
while that synchronization ran.

On a WAN whose links change while the run goes (dynamics, the console,
`testbed inject`), the bound of the links as first configured says little:
a synchronization that ran while a link was at a fifth of its rate is held
against the rate in force then.  The WAN at a moment is the configured one
with every change in links.jsonl up to that moment applied (the changes
carry the wall clock, as the agents' events do); a synchronization begins
when its slowest worker's `iter` event says it did (its end less its sync
time) and ends with that event.  Where the WAN did not change in between,
its bound is t_lb of the WAN then, cached by WAN state (most iterations
share one).  Where it did (rates redrawn every 10 s change them twice in a
synchronization of 20 s), the bound of the WAN at the start alone would
hold a synchronization against rates it met only for a while: it is t_lb
with each link's rates as they changed (`lower.t_lb`'s profile), every
link at the least delay it had.

A synchronization can be timed two ways.  A worker's `sync` runs from when
it handed over its update; under BSP one that finished the previous
iteration early then waits for the one that finished last (`wait`), so the
slowest `sync` of an iteration counts the previous one's spread of
finishing times again.  Counted from the last start (`sync` less `wait`)
every contribution is ready at once, as t_lb assumes: the like-for-like
count, and the one to hold against the bound.
"""

import copy

from agents.planning.wan import Wan
from testbed.bounds.lower import t_lb
from testbed.bounds.model import wan_of

FIELDS = ("rate", "delay", "jitter", "up")


def wan_states(spec, changes):
    """[(wall time, spec dict)]: the spec as configured (time -inf), then
    after each change in order."""
    state = copy.deepcopy(spec)
    directions = {}
    for w in state["wan"]:
        directions[(w["a"], w["b"])] = w["ab"]
        directions[(w["b"], w["a"])] = w["ba"]
    out = [(float("-inf"), copy.deepcopy(state))]
    for c in sorted(changes, key=lambda c: c["wall"]):
        d = directions.get((c["src"], c["dst"]))
        if d is None:
            continue
        d.update({k: c[k] for k in FIELDS if k in c})
        out.append((c["wall"], copy.deepcopy(state)))
    return out


def spent(e, from_last_start=False):
    """Seconds of one worker's synchronization in its `iter` event: from
    handing over its update, or (`from_last_start`) from when the last
    contributor handed over its own."""
    return e["sync"] - (e.get("wait") or 0.0) if from_last_start else e["sync"]


def slowest_syncs(iters, from_last_start=False):
    """{iteration: (sync time, wall time it began)} of each iteration's
    slowest worker, counted as `spent` says."""
    slowest = {}
    for e in iters:
        took = spent(e, from_last_start)
        if e["it"] not in slowest or took > slowest[e["it"]][0]:
            slowest[e["it"]] = (took, e["wall"] - took)
    return slowest


def bounds_per_iteration(spec, changes, iters, model_bytes, from_last_start=False, cache=None):
    """[(iteration, sync time, t_lb)] per iteration: its slowest worker's
    sync time (counted as `spent` says) and the bound on the WAN as it was
    while that sync ran.  `cache` ({WAN state: t_lb}) can be shared by calls
    on the same run and model, which then solve each state once."""
    states = wan_states(spec, changes)
    cache = {} if cache is None else cache
    out = []
    for it, (took, began) in sorted(slowest_syncs(iters, from_last_start).items()):
        first = max(i for i, (t, _) in enumerate(states) if t <= began)
        spanned = [(max(t - began, 0.0), state) for t, state in states[first:] if t <= began + took]
        key = repr([(t, state["wan"]) for t, state in spanned])
        if key not in cache:
            cache[key] = bound_while(spanned, model_bytes)
        out.append((it, took, cache[key]))
    return out


def bound_while(spanned, model_bytes):
    """t_lb of one synchronization over the WAN states it met: [(seconds
    from its start, spec dict)], the first at 0; None where no state lets
    every terminal reach every other."""
    wans = [(t, wan_of(state)) for t, state in spanned]
    if len(wans) == 1:
        wan = wans[0][1]
        return t_lb(wan, model_bytes) if wan.reachable() else None
    links = {}
    for _, wan in wans:
        for link, (rate, delay) in wan.links.items():
            most, least = links.get(link, (0.0, delay))
            links[link] = (max(most, rate), min(least, delay))
    union = Wan.of_numbers(links, wans[0][1].agents, wans[0][1].terminals)
    if not union.reachable():
        return None
    profile = {link: [(t, wan.links.get(link, (0.0, 0.0))[0]) for t, wan in wans] for link in links}
    return t_lb(union, model_bytes, profile=profile)


def time_to_carry(pieces, nbytes):
    """Seconds a link whose rate is `pieces` ([(from, bytes/s)], the first
    from 0) takes to carry nbytes (inf if it never does)."""
    carried = 0.0
    for k, (start, rate) in enumerate(pieces):
        end = pieces[k + 1][0] if k + 1 < len(pieces) else float("inf")
        if rate > 0 and carried + rate * (end - start) >= nbytes:
            return start + (nbytes - carried) / rate
        carried += rate * (end - start)
    return float("inf")
