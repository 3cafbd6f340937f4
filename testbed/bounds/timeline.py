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


def bounds_per_iteration(spec, changes, iters, model_bytes):
    """[(iteration, sync time, t_lb then)] per iteration: its slowest
    worker's sync time and the bound on the WAN in force when that sync began."""
    slowest = {}
    for e in iters:
        if e["it"] not in slowest or e["sync"] > slowest[e["it"]]["sync"]:
            slowest[e["it"]] = e
    states = wan_states(spec, changes)
    cache, out = {}, []
    for it, e in sorted(slowest.items()):
        began = e["wall"] - e["sync"]
        index = max(i for i, (t, _) in enumerate(states) if t <= began)
        key = repr(states[index][1]["wan"])
        if key not in cache:
            wan = wan_of(states[index][1])
            cache[key] = t_lb(wan, model_bytes) if wan.reachable() else None
        out.append((it, e["sync"], cache[key]))
    return out
