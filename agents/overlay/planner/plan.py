"""The planner's plans as pure functions: estimates in, a policy (slices,
their rates and trees) out, and the Plan or family of trees a policy
gives (see the package docstring for the model)."""

import math

from agents.dataplane.plan import Piece, Plan
from agents.dataplane.tree import segments
from agents.overlay.netstorm.plan import overlay_dcs, servers_by_dc, takes_part  # noqa: F401
from agents.overlay.planner.options import DEFAULTS, OPTIONS, PlannerOptions, option  # noqa: F401
from agents.planning.lp import LP
from agents.planning.packing import arc_delays, tree_packings
from agents.planning.wan import Wan


def refuse(server_counts, worker_counts):
    """Why these DCs cannot run the planner, or None: every DC with workers
    needs a server to sum them and to relay; transit DCs only forward."""
    bare = [dc for dc, n in worker_counts.items() if n and server_counts.get(dc, 0) < 1]
    if bare:
        return (f"the planner sums each DC's workers at its server, and {', '.join(bare)} "
                f"{'has' if len(bare) == 1 else 'have'} workers but no server")
    return None


def route_paths(layout, order):
    """{(a, b): (dc, ...)} the routers' path between every two overlay DCs."""
    return {(a, b): tuple(layout.routes[f"{a}>{b}"]) for a in order for b in order
            if a != b and f"{a}>{b}" in layout.routes}


def link_estimates(pairs, routes, links):
    """{link: payload bytes/s} from the probes' estimates of DC pairs
    ({(a, b): bytes/s}) and the routers' paths ({"a>b": [a, ..., b]}): a
    pair routed over just that link gives its rate; failing that, the
    fastest pair routed across it gives a floor."""
    direct, floor = {}, {}
    for (a, b), rate in pairs.items():
        path = routes.get(f"{a}>{b}", [a, b])
        crossed = list(zip(path, path[1:]))
        if crossed == [(a, b)]:
            direct[(a, b)] = rate
        for link in crossed:
            floor[link] = max(floor.get(link, 0.0), rate)
    return {link: direct.get(link, floor.get(link)) for link in links
            if link in direct or link in floor}


def wan_of_estimates(speeds, delays, order, layout):
    """The Wan the planner sees: link directions at their estimated payload
    rate and delay; agents and terminals from who runs where."""
    workers = {dc for _, dc in layout.workers}
    return Wan.of_numbers({link: (speeds[link], delays.get(link, 0.0)) for link in speeds},
                          order, [dc for dc in order if dc in workers])


def compute_policy(speeds, delays, order, layout, previous=None):
    """The plan's policy for payload rates `speeds` and one-way delays
    `delays` ({(a, b): ...} per link direction), as JSON-ready data.  The
    search starts afresh and, given a `previous` policy, from its trees
    too, and the plan that finishes sooner (`finish`) is kept: keeping a
    few trees per root prunes an optimal packing greedily, and the LP has
    many optima, so where the pruning starts decides how much rate it keeps."""
    wan = wan_of_estimates(speeds, delays, order, layout)
    start = [(s["root"], kind, tuple(map(tuple, s[kind])))
             for s in (previous or {}).get("slices", ()) for kind in ("reduce", "broadcast")]
    opts = PlannerOptions.of(layout)
    trade = [k / 10 for k in range(1, 6)] if opts.trade_rate else []
    paths = route_paths(layout, order)
    delay = arc_delays(wan, paths)
    plans = []
    for begin in ([[], start] if start else [[]]):
        packings = tree_packings(wan, paths=paths, keeps=range(1, opts.keep + 1), start=begin,
                                 give_up=trade)
        plans += [policy_of(packing, slices_of(packing, wan.agents, delay), layout)
                  for candidates in packings for packing in candidates]
    return min(plans, key=lambda p: p["finish"])


def policy_of(packing, slices, layout):
    """The JSON-ready policy of a packing's slices: its rate, latency,
    slices, each connection's load and the plan's `finish`."""
    loads = {}
    for s in slices:
        for u, v in s["reduce"] + s["broadcast"]:
            loads[f"{u}>{v}"] = loads.get(f"{u}>{v}", 0.0) + s["rate"]
    policy = {"rate": sum(s["rate"] for s in slices), "latency": packing.latency,
              "slices": slices, "loads": loads}
    policy["finish"] = finish_time(policy, layout)
    return policy


def slices_of(packing, agents, delay):
    """The packing's slices: per root its in- and out-trees paired
    (`pair_trees`), each pair with its rate and the delay of its deepest
    reduce-plus-broadcast path (`delay`: {(u, v): seconds} per connection)."""
    slices = []
    for root in agents:
        mine = lambda kind: sorted(([list(map(list, t.arcs)), t.rate] for t in packing.trees  # noqa: E731
                                    if t.root == root and t.kind == kind), key=lambda x: -x[1])
        for up, down, rate in pair_trees(mine("reduce"), mine("broadcast")):
            slices.append({"root": root, "reduce": up, "broadcast": down, "rate": rate,
                           "delay": depth(up, root, "reduce", delay) + depth(down, root, "broadcast", delay)})
    return slices


def pair_trees(reduce, broadcast):
    """[(reduce arcs, broadcast arcs, rate)]: a root's in-trees and out-trees
    ([arcs, rate], heaviest first) paired by the north-west corner rule;
    what one kind has beyond the other is dropped (a root can only carry
    what it both reduces and broadcasts)."""
    out, i, j = [], 0, 0
    left_up = reduce[0][1] if reduce else 0.0
    left_down = broadcast[0][1] if broadcast else 0.0
    while i < len(reduce) and j < len(broadcast):
        rate = min(left_up, left_down)
        if rate > 0:
            out.append((reduce[i][0], broadcast[j][0], rate))
        left_up -= rate
        left_down -= rate
        if left_up <= left_down:
            i += 1
            left_up = reduce[i][1] if i < len(reduce) else 0.0
        else:
            j += 1
            left_down = broadcast[j][1] if j < len(broadcast) else 0.0
    return out


def finishing(rates, fills, size):
    """(T, the slices that get elements): slices of these rates (bytes/s)
    and fills (s) sized to finish together, slice t taking
    fills[t] + 4 n_t / rates[t] seconds for its n_t elements; a slice whose
    fill alone reaches T gets none (the rest, sized again without it,
    finish sooner)."""
    active = [k for k, r in enumerate(rates) if r > 0]
    while True:
        finish = (4 * size + sum(rates[k] * fills[k] for k in active)) / sum(rates[k] for k in active)
        # The least fill always stays: with no elements to size, T is that fill.
        least = min(fills[k] for k in active)
        kept = [k for k in active if fills[k] < finish or fills[k] == least]
        if kept == active:
            return finish, active
        active = kept


def slice_sizes(rates, size, fills=None):
    """Elements per slice, summing to `size` (largest remainders, ties to
    the earlier slice): proportional to the rates, or with `fills`, so that
    they finish together (`finishing`)."""
    if size == 0:
        return [0] * len(rates)
    finish, active = finishing(rates, fills or [0.0] * len(rates), size)
    exact = [rates[k] * (finish - fills[k] if fills else 1.0) if k in active else 0.0
             for k in range(len(rates))]
    total = sum(exact)
    exact = [x * size / total for x in exact]
    sizes = [int(x) for x in exact]
    order = sorted(range(len(rates)), key=lambda k: (-(exact[k] - sizes[k]), k))
    for k in order[:size - sum(sizes)]:
        sizes[k] += 1
    return sizes


def depth(arcs, root, kind, cost=None):
    """The costliest path between the root and a leaf of a tree, a
    connection (u, v) costing cost[(u, v)] (by default 1: hops)."""
    children = {}
    for u, v in arcs:
        parent, child = (u, v) if kind == "broadcast" else (v, u)
        children.setdefault(parent, []).append(child)

    def down(node):
        arc = (lambda c: (node, c)) if kind == "broadcast" else (lambda c: (c, node))
        return max(((1 if cost is None else cost[tuple(arc(c))]) + down(c)
                    for c in children.get(node, ())), default=0)
    return down(root)


def hops(s):
    """Connections on a slice's deepest reduce-plus-broadcast path."""
    return max(1, depth(s["reduce"], s["root"], "reduce") + depth(s["broadcast"], s["root"], "broadcast"))


def fill_times(policy, segment, size):
    """Seconds each slice of `policy` needs besides moving its bytes: one
    segment's store-and-forward at the slice's rate on every hop of its
    deepest path (a slice that, sized by rate, is smaller than a segment
    is one segment of its own size), plus that path's delay."""
    by_rate = slice_sizes([s["rate"] for s in policy["slices"]], size)
    return [hops(s) * 4 * min(segment, n) / s["rate"] + s.get("delay", 0.0) if s["rate"] > 0 else 0.0
            for s, n in zip(policy["slices"], by_rate)]


def planned_fills(policy, layout):
    """The fills the plan sizes slices by: `fill_aware` times each slice's
    (0: by rate alone)."""
    share = PlannerOptions.of(layout).fill_aware
    return [share * f for f in fill_times(policy, segment_of(policy, layout), layout.size)]


def sizes_of(policy, layout):
    """Elements of each slice of `policy`, sized to finish together given
    their planned fills."""
    return slice_sizes([s["rate"] for s in policy["slices"]], layout.size, planned_fills(policy, layout))


def pieces_planned(policy, layout):
    """What the plan expects of each piece of `plan_of` (the slices that get
    elements), in piece order: its root, rate (bit/s), elements and fill
    (s); it should take fill + 32 elements / rate seconds."""
    fills = planned_fills(policy, layout)
    sizes = slice_sizes([s["rate"] for s in policy["slices"]], layout.size, fills)
    return [{"root": s["root"], "rate": s["rate"] * 8, "elements": n, "fill": f}
            for s, n, f in zip(policy["slices"], sizes, fills) if n > 0]


def finish_time(policy, layout):
    """Seconds the plan expects its slices to take: M / R plus the packing's
    latency when sized by rate alone, else their common finish with fills."""
    if not PlannerOptions.of(layout).fill_aware:
        return 4 * layout.size / policy["rate"] + policy["latency"]
    return finishing([s["rate"] for s in policy["slices"]], planned_fills(policy, layout), layout.size)[0]


def segment_of(policy, layout):
    """Elements per segment: every slice, sized by rate, in at least
    `pipeline` segments per hop of its reduce-plus-broadcast depth, but no
    smaller than `min_segment`; a dispatched policy's blocks are
    `dispatch_block` elements."""
    opts = PlannerOptions.of(layout)
    if policy.get("dispatch"):
        return int(opts.dispatch_block)
    sizes = slice_sizes([s["rate"] for s in policy["slices"]], layout.size)
    finest = min((n / (opts.pipeline * hops(s))
                  for s, n in zip(policy["slices"], sizes) if n > 0), default=layout.size)
    return max(int(opts.min_segment), int(finest), 1)


def plan_of(policy, layout):
    """The Plan of a policy: one piece per slice (see the package docstring)."""
    pieces, start = [], 0
    for s, n in zip(policy["slices"], sizes_of(policy, layout)):
        if n == 0:
            continue
        pieces.append(slice_piece(s, start, start + n, layout))
        start += n
    return Plan(layout.size, tuple(layout.worker_names), tuple(pieces)).validate()


def slice_piece(s, start, stop, layout):
    """A slice's trees over the agents as a Piece of elements start..stop:
    every worker sums into its DC's server, the servers as the slice's
    reduce tree, and the new values go down its broadcast tree, each server
    also feeding its DC's workers."""
    nodes = servers_by_dc(layout)
    workers_in = {}
    for w, dc in layout.workers:
        workers_in.setdefault(dc, []).append(w)
    parent = {w: nodes[dc] for w, dc in layout.workers}
    parent.update({nodes[u]: nodes[v] for u, v in s["reduce"]})
    children = {}
    for u, v in s["broadcast"]:
        children.setdefault(nodes[u], []).append(nodes[v])
    for dc in {s["root"]} | {v for _, v in s["broadcast"]}:
        children.setdefault(nodes[dc], []).extend(sorted(workers_in.get(dc, [])))
    return Piece(start, stop, nodes[s["root"]], parent, {k: sorted(v) for k, v in sorted(children.items())})


def family_trees(policy, layout):
    """Every slice of a dispatched policy as a Piece over the whole model
    (`agents/dataplane/dispatch`: a block's range is its own), each
    checked as a Plan of its own."""
    pieces = tuple(slice_piece(s, 0, layout.size, layout) for s in policy["slices"])
    for p in pieces:
        Plan(layout.size, tuple(layout.worker_names), (p,)).validate()
    return pieces


def family_policy(policies):
    """One policy whose slices are those of every policy in `policies`
    (plans made on several readings of the links), the same trees to the
    same root kept once at their highest rate; its own numbers (rate,
    latency, finish) are the first policy's, and `dispatch` marks it run
    by `agents/dataplane/dispatch`."""
    slices = {}
    for policy in policies:
        for s in policy["slices"]:
            key = (s["root"], tuple(map(tuple, s["reduce"])), tuple(map(tuple, s["broadcast"])))
            if key not in slices or slices[key]["rate"] < s["rate"]:
                slices[key] = s
    first = policies[0]
    out = {**first, "slices": sorted(slices.values(), key=lambda s: -s["rate"]), "dispatch": True,
           "readings": len(policies)}
    loads = {}
    for s in out["slices"]:
        for u, v in s["reduce"] + s["broadcast"]:
            loads[f"{u}>{v}"] = loads.get(f"{u}>{v}", 0.0) + s["rate"]
    out["loads"] = loads
    return out


def slice_loads(policy, layout):
    """Per slice of `policy`, {(a, b): times a byte of it crosses link a -> b}:
    once for each of its reduce and broadcast connections whose routers'
    path crosses the link."""
    out = []
    for s in policy["slices"]:
        load = {}
        for u, v in s["reduce"] + s["broadcast"]:
            path = layout.routes.get(f"{u}>{v}", [u, v])
            for link in zip(path, path[1:]):
                load[link] = load.get(link, 0) + 1
        out.append(load)
    return out


def family_rates(policy, speeds, layout):
    """Each slice's payload bytes/s when the slices of `policy` together
    carry the most the links allow at `speeds` ({link: bytes/s}): maximise
    the sum of the slices' rates x_s subject to, on every link l, the sum of
    x_s times the crossings of l by a byte of s (`slice_loads`) being at
    most speeds[l].  An LP over the slices the family has, not a new
    packing: a plan's trees are fixed while its iteration runs."""
    loads = slice_loads(policy, layout)
    unit = max(speeds.values(), default=0.0) or 1.0        # HiGHS likes numbers near 1
    lp = LP()
    cols = [lp.var(cost=-1.0) for _ in loads]
    for link in sorted({link for load in loads for link in load}):
        lp.row([(c, load[link]) for c, load in zip(cols, loads) if link in load], "<=",
               speeds.get(link, 0.0) / unit)
    res = lp.solve()
    if res.status != 0:
        return [0.0] * len(loads)
    return [max(0.0, float(res.x[c])) * unit for c in cols]


def steered_windows(policy, rates, layout):
    """Per slice the blocks it keeps out to run at its rate in `rates`
    (payload bytes/s): `dispatch_headroom` times its rate over one round
    trip of a block, the slice's propagation delay (its `delay`, up its
    reduce and down its broadcast tree) plus `dispatch_turnaround` (the
    blocks' store-and-forward and the agents' and the dispatcher's own
    time), in blocks, rounded up; none for a slice of no rate.  The
    fastest slice keeps at least one, so blocks always flow."""
    block = 4 * segment_of(policy, layout)
    opts = PlannerOptions.of(layout)
    headroom, turnaround = opts.dispatch_headroom, opts.dispatch_turnaround
    out = [math.ceil(headroom * r * (s.get("delay", 0.0) + turnaround) / block - 1e-9) if r > 0 else 0
           for s, r in zip(policy["slices"], rates)]
    if out and max(out) < 1:
        out[max(range(len(out)), key=lambda k: rates[k])] = 1
    return out


def blocks_of(policy, layout):
    """How many blocks a dispatched policy cuts the model into: its segments."""
    return len(segments(0, layout.size, segment_of(policy, layout)))


def connection_rates(policy, dc, layout):
    """{peer server: bit/s} this DC's server paces its connections to (none
    when `pace` is 0, or the policy was made before every link had an estimate)."""
    opts = PlannerOptions.of(layout)
    if not opts.pace or not policy.get("pace", True):
        return {}
    nodes = servers_by_dc(layout)
    share = opts.pace_share
    return {nodes[v]: load * 8 * share for key, load in policy["loads"].items()
            for u, v in [key.split(">")] if u == dc}
