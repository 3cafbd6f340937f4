"""The lower bound of each synchronization of a run, on the WAN as it was
when that synchronization began.

On a WAN whose links change while the run goes (dynamics, the console,
`testbed inject`), the bound of the links as first configured says little:
a synchronization that ran while a link was at a fifth of its rate is held
against the rate in force then.  The WAN at a moment is the configured one
with every change in links.jsonl up to that moment applied (the changes
carry the wall clock, as the agents' events do); a synchronization begins
when its slowest worker's `iter` event says it did (its end less its sync
time).  Bounds are cached by WAN state: most iterations share one.

A synchronization can be timed two ways.  A worker's `sync` runs from when
it handed over its update; under BSP one that finished the previous
iteration early then waits for the one that finished last (`wait`), so the
slowest `sync` of an iteration counts the previous one's spread of
finishing times again.  Counted from the last start (`sync` less `wait`)
every contribution is ready at once, as t_lb assumes: the like-for-like
count, and the one to hold against the bound.
"""

import copy

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


def bounds_per_iteration(spec, changes, iters, model_bytes, from_last_start=False, cache=None):
    """[(iteration, sync time, t_lb then)] per iteration: its slowest
    worker's sync time (counted as `spent` says) and the bound on the WAN in
    force when that sync began.  `cache` ({WAN state: t_lb}) can be shared
    by calls on the same run and model, which then solve each state once."""
    slowest = {}
    for e in iters:
        took = spent(e, from_last_start)
        if e["it"] not in slowest or took > slowest[e["it"]][0]:
            slowest[e["it"]] = (took, e)
    states = wan_states(spec, changes)
    cache = {} if cache is None else cache
    out = []
    for it, (took, e) in sorted(slowest.items()):
        began = e["wall"] - took
        index = max(i for i, (t, _) in enumerate(states) if t <= began)
        key = repr(states[index][1]["wan"])
        if key not in cache:
            wan = wan_of(states[index][1])
            cache[key] = t_lb(wan, model_bytes) if wan.reachable() else None
        out.append((it, took, cache[key]))
    return out
