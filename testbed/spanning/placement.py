"""Which machine builds which data center when one emulated WAN spans several.

A machine builds whole data centers: a DC's router, bridge and hosts stay
together, so only WAN links cross machines, each carried by a tunnel and
shaped at its sending router like a local link.  What limits a machine is
the CPU its WAN frames cost, which `benchmarks/scale.py` measures with
every link direction busy.  The cost per frame given here
(`cost_per_frame`: seconds of machine CPU for one full-size frame of a
link's rate, from its sender to its receiver) is its machine's busy time
over the full-size frames of the links' rates; its own per-frame column
counts the flows' ACKs as frames too.  docs/clusters.md ("How many
machines") has the numbers measured.  Each end of a link does part of
that work, so a DC's load in cores is the frames per second its links carry (both
directions of each, `frame_rates`) times half the cost per frame: the loads
of DCs on one machine add up to what that machine measured for them
together.  A machine takes DCs up to `headroom` (70%) of its cores.

The heaviest links stay inside one machine: a link between machines also
costs the underlay its traffic and both machines their tunnel's work, which
the cost per frame above does not hold, so a placement should cut light
links only.  `place` merges DCs along links from the heaviest to the
lightest while the merged group still fits the largest machine, then puts
the groups on machines heaviest first, each on the machine with the most
budget left (worst-fit decreasing, which keeps machines balanced).  A group
that no longer fits where it must go is split again by the same rule at the
budget left there; a DC that fits nowhere is an error that names it.
Everything here is pure and deterministic: ties go to the DC or link named
first in the spec and the machine listed first.
"""

from dataclasses import dataclass

from testbed.emulation.shaping import FRAME_BYTES

DEFAULT_HEADROOM = 0.7
# Seconds of machine CPU per full-size frame crossing a WAN link, sender to
# receiver: benchmarks/scale.py's measurement on the 9-DC ring, as
# docs/clusters.md ("How many machines") derives it.
COST_PER_FRAME = 28.1e-6
# Each end of a link direction (sender and receiver) carries this share of
# a frame's cost; the two shares add up to the frame's whole cost.
END_SHARE = 0.5
# Loads are sums of floats: a group that fills its budget exactly fits.
SLACK = 1e-9


@dataclass(frozen=True)
class Machine:
    name: str
    cores: float         # cores it gives the emulation


class PlacementError(ValueError):
    """Why the WAN cannot be placed on these machines, in one sentence."""


@dataclass(frozen=True)
class Placement:
    machine_of: dict     # DC name -> machine name, in the spec's order of DCs
    cross: tuple         # indexes in spec.wan of links whose DCs are on different machines
    load: dict           # machine name -> cores its DCs need, in the order machines were given


@dataclass(frozen=True)
class _Group:
    dcs: tuple           # in the spec's order
    load: float
    machine: str = None  # where a pinned DC of the group must go


def frame_rates(spec):
    """{DC: frames per second crossing its WAN links} when every direction
    runs at its highest rate: each direction carries rate / (8 x 1514 B)
    full-size frames, counted for both its DCs (the sender's and the
    receiver's work).  A link declares no bounds of its own for live
    changes, so a direction's highest rate is its configured one, or the
    highest rate the spec's dynamics (changes, traces, generators) ever
    give it, if higher; a rate set from the console is not foreseen.  DCs
    without links have 0."""
    rates = {dc.name: 0.0 for dc in spec.datacenters}
    for link, (ab, ba) in zip(spec.wan, highest_rates(spec)):
        frames = (ab + ba) / (8 * FRAME_BYTES)
        rates[link.a] += frames
        rates[link.b] += frames
    return rates


def highest_rates(spec):
    """[(a->b, b->a)] in bit/s per link of spec.wan: the configured rate, or
    the highest rate the spec's dynamics give that direction."""
    highest = [[link.ab.rate, link.ba.rate] for link in spec.wan]
    side = {}
    for i, link in enumerate(spec.wan):
        side.setdefault((link.a, link.b), (i, 0))
        side.setdefault((link.b, link.a), (i, 1))
    for schedule in spec.dynamics:
        if schedule.target[0] != "link":
            continue
        _, a, b, both = schedule.target
        rate = _highest_scheduled(schedule)
        i, forward = side[(a, b)]
        if rate is not None:
            for s in (0, 1) if both else (forward,):
                highest[i][s] = max(highest[i][s], rate)
    return [tuple(h) for h in highest]


def _highest_scheduled(schedule):
    """The highest rate a link schedule sets, or None if it sets none."""
    if schedule.kind == "generator":
        _, params = schedule.generator
        values = [params.get(k) for k in ("before", "after", "low", "high", "initial")]
    else:
        values = [v.get("rate") for _, v in schedule.points]
    return max((v for v in values if v is not None), default=None)


def place(spec, machines, cost_per_frame, headroom=DEFAULT_HEADROOM, pinned=None):
    """The Placement of spec's DCs on `machines` ([Machine]); cost_per_frame
    in seconds of machine CPU per full-size frame crossing a WAN link;
    `pinned` ({DC: machine name}) puts those DCs, and the groups holding
    them, on their machines first.  Raises PlacementError."""
    machines = list(machines)
    _check(machines, cost_per_frame, headroom)
    budget = {m.name: m.cores * headroom for m in machines}
    dcs = [dc.name for dc in spec.datacenters]
    pinned = dict(pinned or {})
    _check_pins(pinned, dcs, budget)
    load = {dc: frames * cost_per_frame * END_SHARE for dc, frames in frame_rates(spec).items()}
    cores = {m.name: m.cores for m in machines}
    largest = max(machines, key=lambda m: m.cores).name   # the first of the largest
    for dc in sorted(dcs, key=lambda dc: -load[dc]):     # the heaviest is named
        where = pinned.get(dc, largest)
        if load[dc] > budget[where] + SLACK:
            offers = f"{where} offers" if dc in pinned else "any machine offers"
            pin = f", pinned to {where}," if dc in pinned else ""
            raise PlacementError(f"data center {dc}{pin} needs {_c(load[dc])} cores of emulation at "
                                 f"its links' rates, more than {offers} ({_c(budget[where])} of "
                                 f"{_cores(cores[where])} at {headroom:.0%})")
    total = sum(load.values())
    if total > sum(budget.values()) + SLACK:
        offers = f"machine {machines[0].name} offers" if len(machines) == 1 else \
            f"the {len(machines)} machines offer together"
        raise PlacementError(f"the WAN's data centers need {_c(total)} cores of emulation at their "
                             f"links' rates, more than {offers} ({_c(sum(budget.values()))} of "
                             f"{_cores(sum(cores.values()))} at {headroom:.0%})")
    rates = highest_rates(spec)
    by_rate = sorted(range(len(spec.wan)), key=lambda i: -(rates[i][0] + rates[i][1]))
    links = [(spec.wan[i].a, spec.wan[i].b) for i in by_rate]
    order = {dc: i for i, dc in enumerate(dcs)}
    left = dict(budget)
    machine_of = {}
    queue = _groups(dcs, links, load, pinned, {**budget, None: budget[largest]})
    while queue:
        # Pinned groups first, then the heaviest; ties: the DC named first.
        queue.sort(key=lambda g: (g.machine is None, -g.load, order[g.dcs[0]]))
        group = queue.pop(0)
        target = group.machine if group.machine is not None else max(left, key=lambda m: left[m])
        if group.load <= left[target] + SLACK:
            for dc in group.dcs:
                machine_of[dc] = target
            left[target] -= group.load
        elif len(group.dcs) == 1:
            raise PlacementError(_no_room(group, load, left, target, budget))
        else:
            inner = [(a, b) for a, b in links if a in group.dcs and b in group.dcs]
            room = dict.fromkeys([*budget, None], left[target])
            queue += _groups(group.dcs, inner, load, pinned, room)
    machine_of = {dc: machine_of[dc] for dc in dcs}
    cross = tuple(i for i, link in enumerate(spec.wan) if machine_of[link.a] != machine_of[link.b])
    used = {m.name: 0.0 for m in machines}
    for dc in dcs:
        used[machine_of[dc]] += load[dc]
    return Placement(machine_of=machine_of, cross=cross, load=used)


def machines_needed(spec, cores_per_machine, cost_per_frame, headroom=DEFAULT_HEADROOM):
    """The fewest machines of `cores_per_machine` cores each that `place`
    fits the WAN on (one per DC at most); PlacementError when a DC alone is
    too heavy for one."""
    def fleet(k):
        return [Machine(f"m{i + 1}", cores_per_machine) for i in range(k)]

    n = len(spec.datacenters)
    for k in range(1, n):
        try:
            place(spec, fleet(k), cost_per_frame, headroom)
            return k
        except PlacementError:
            pass
    # One machine per DC fits unless a DC alone is too heavy, which this says.
    place(spec, fleet(n), cost_per_frame, headroom)
    return n


def _groups(dcs, links, load, pinned, cap):
    """[_Group] of `dcs`, merged along `links` (heaviest first) while a
    merged group stays within cap[its pinned machine, or None when it has
    none]; groups pinned to different machines never merge."""
    parent = {dc: dc for dc in dcs}
    weight = {dc: load[dc] for dc in dcs}
    machine = {dc: pinned.get(dc) for dc in dcs}
    position = {dc: i for i, dc in enumerate(dcs)}

    def root(dc):
        while parent[dc] != dc:
            parent[dc] = parent[parent[dc]]
            dc = parent[dc]
        return dc

    for a, b in links:
        ra, rb = root(a), root(b)
        if ra == rb:
            continue
        ma, mb = machine[ra], machine[rb]
        if ma is not None and mb is not None and ma != mb:
            continue
        m = ma if ma is not None else mb
        if weight[ra] + weight[rb] > cap[m] + SLACK:
            continue
        keep, gone = (ra, rb) if position[ra] < position[rb] else (rb, ra)
        parent[gone] = keep
        weight[keep] += weight[gone]
        machine[keep] = m
    members = {}
    for dc in dcs:
        members.setdefault(root(dc), []).append(dc)
    return [_Group(tuple(group), weight[r], machine[r]) for r, group in members.items()]


def _no_room(group, load, left, target, budget):
    dc = group.dcs[0]
    if group.machine is not None:
        return (f"data center {dc}, pinned to {target}, needs {_c(load[dc])} cores of emulation at "
                f"its links' rates, and {target} has only {_c(left[target])} of its "
                f"{_c(budget[target])} left")
    return (f"data center {dc} needs {_c(load[dc])} cores of emulation at its links' rates, and no "
            f"machine has that much left (the most is {_c(left[target])} cores, on {target}): "
            f"add a machine")


def _check(machines, cost_per_frame, headroom):
    if not machines:
        raise PlacementError("there are no machines to place the WAN on")
    seen = set()
    for m in machines:
        if m.name in seen:
            raise PlacementError(f"two machines are named {m.name}: each needs a name of its own")
        seen.add(m.name)
        if not m.cores > 0:
            raise PlacementError(f"machine {m.name} gives the emulation {m.cores:g} cores; "
                                 f"it needs more than none")
    if not cost_per_frame > 0:
        raise PlacementError(f"the cost per frame must be above zero seconds, not {cost_per_frame!r}")
    if not 0 < headroom <= 1:
        raise PlacementError(f"the headroom is a share of a machine's cores above 0 and at most 1, "
                             f"not {headroom!r}")


def _check_pins(pinned, dcs, budget):
    for dc, machine in pinned.items():
        if dc not in dcs:
            raise PlacementError(f"{dc} is pinned to {machine} but is not a data center of this WAN")
        if machine not in budget:
            raise PlacementError(f"data center {dc} is pinned to {machine}, which is not one of the "
                                 f"machines ({', '.join(budget)})")


def _c(cores):
    return f"{cores:.3g}"


def _cores(cores):
    return "1 core" if cores == 1 else f"{_c(cores)} cores"

