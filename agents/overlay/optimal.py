"""A planner from the network's own estimates: the best multi-root tree
packing, cut into few explicit trees, each carrying a slice of the model
at its planned rate.

Source: TREE-OPT as `agents/planning/packing.py` states it (multi-root
fractional arborescence packing, reduce and broadcast concurrently, trees
by column generation with the cheapest spanning arborescence as the
pricing step; Edmonds' branching theorem for why trees suffice), the
overlay-over-underlay model of Marfoq et al. (NeurIPS 2020), and mTree's
"few trees with workload proportions" (Luo et al., IEEE TNSE 2024).

What the planner reads, every number estimated (never the configured
links): a link direction's payload rate is the probes' packet-train
estimate of the DC pair the link joins (the highest of the last
`estimate_memory` seconds, see `optimal_policy`) where the routers send
that pair over it, as wire rate times 1448/1514; otherwise the most any estimated pair whose route crosses
the link gets (a path is as fast as its slowest link, so that is a floor);
a link nothing crosses yet counts as the slowest known one (with
`experiment.probe: {pairs: neighbours}` every link direction has a pair of
its own, probed as often as the budget allows).  A
connection's delay is half the least RTT the pair's probes read within
`rtt_memory` seconds (`optimal_policy`).  The routes are the ones the routers take
(`layout.routes`): a connection between two agents is held to that path,
so no extra routes are needed (where every DC hosts an agent, Edmonds'
theorem says trees over neighbouring DCs already reach the cut bound; the
gap to free multipath on other WANs is what `testbed bound` shows as t_opt
against the plan's own time).  A link nothing is known about yet counts
as equal to the others, so the first iteration can start at once; the
first estimates then re-plan.

The plan (`plan_of`):
- every root keeps its `keep` heaviest in- and out-trees (rates solved
  again over those, `packing.tree_packing`), or fewer: each count from 1
  to `keep` is solved (more trees carry more rate, but every slice adds
  its fill, below: on the 9-DC WAN at a quarter rate, with 10 MB, one
  tree each finishes 5% sooner than two; where the text is silent we
  choose this);
- the packing of most rate is not always the soonest: with `trade_rate`,
  packings that give up 10, 20, ... 50% of the rate for shallower trees are
  solved too (a small model is all latency; where the text is silent we
  choose this ladder).  Of every count of trees and every share given up,
  the plan whose slices finish soonest, fills counted (`finish`, below),
  is kept;
- a root's in-trees and out-trees are paired in order of weight, each
  pair taking the overlap of their rates (north-west corner rule), so a
  pair is one reduce tree and one broadcast tree sharing a slice;
- a slice's elements are sized so that every slice finishes at once, one
  piece per slice.  A slice of n_t bytes at rate w_t does not take
  n_t / w_t: before its first byte is summed and back at the farthest
  leaf, one segment of S bytes is stored and forwarded on each of its h_t
  hops at its rate, and the path's delay d_t passes, so it takes
  f_t + n_t / w_t with f_t = h_t S / w_t + d_t.  Sized by rate alone, the
  slowest slices would finish up to f_t after the others, their links
  busy while the rest stand idle; sized for their fills
  (n_t = w_t (T - f_t), a slice whose fill alone reaches T dropped), all
  finish at T = (M + sum w_t f_t) / R, the policy's `finish`.  Where the
  text is silent (its fluid model has no segments) we choose this model
  of the fill; it is pessimistic, since a connection lends a filling slice
  what its other flows leave unused, so `fill_aware` (0 to 1) scales the
  fills the sizes count (0: by rate alone);
- a slice's aggregation tree is the in-tree over the DCs' servers with
  every worker below its own DC's server, its distribution tree the
  out-tree, each server also feeding its DC's workers;
- segments (the executor's pipelining unit) are chosen from the pipeline
  depth: each slice is cut into at least `pipeline` segments per hop of its
  deepest reduce-plus-broadcast path, so the trees' stages overlap, but
  no segment smaller than `min_segment` elements (where the text is
  silent: the per-message cost of the transport sets that floor; both are
  parameters);
- every overlay connection between two DCs' servers is paced in the
  transport at `pace_share` times its planned load (`pace: 0` leaves TCP to
  share), so connections that share a link keep the shares the plan gave;
  and, with `kernel_pace` above 0, in the kernel at that many times the
  load (`agents/kernel_pacing`: TCP spaces its packets, so the chunks the
  transport releases do not reach a link's queue as bursts; 0, the
  default, leaves TCP as it is).  It must be above 1 by more than the
  segments' headers (1.3%), or the transport is held below its rate.  On
  the 9-DC WAN at a quarter rate, the servers' TCP retransmitted 8,463
  segments over five iterations without it and 1,540-1,997 with it at
  1.10 (two runs).  The text is silent; the recipe was drawn with 1.05
  and `overheads` below (`results/planner-figure/README.md`): no faster
  at a quarter rate, slower at half and on ps-scaling, so both are off by
  default;
- with `overheads: 1` the plan takes `usable_share` of each link's estimate:
  the estimate is what a packet train reads of an idle link, but while
  the plan runs, its probes' trains take up to their budget
  (`experiment.probe.budget`, 5% by default; 4.0% measured on one link;
  the full budget even where a smaller `steady_budget` is set, since a
  link that moves is read on the full one),
  the ACKs of the reverse direction take a 66-byte frame for every two
  full ones (2.2% of a link whose reverse is full, as most are here), and
  each segment carries a header of about MESSAGE_HEADER_BYTES.  Planned at
  the whole estimate, a link is overfull: on the 9-DC WAN at a quarter
  rate the first hop of the last slice ran at 0.94-0.96 of its planned
  rate, and its queue overflowed all iteration.  The text is silent (its
  fluid model has no such traffic); this is off by default (above).

Re-planning: the coordinator keeps the policy in force and, every
`check_period` seconds, re-plans when the estimates moved by more than
`update_change` (the largest relative change of a link); the new
plan takes effect at the next iteration every node agrees on (NetStorm's
policy-switch protocol, `netstorm_policy`), so no piece is aggregated
under two plans.  `replan: 0` freezes the first estimated plan.  A plan
made before every pair's estimate was the median of `settle_readings`
trains is made again once they all are, whatever the change
(`optimal_policy`).

A WAN whose rates change within an iteration (`agents/planning/volatility`:
the links' estimates step by more than `update_change` more often than
once per `hold_iterations` iterations, judged over `volatile_memory`
seconds) is planned for differently, since a plan made on the latest
estimates is stale before it has run: each pair's rate is then the highest
its trains read within `volatile_memory` seconds, the best the link has
shown lately rather than its rate of the moment, and connections are not
paced (`volatile_pace: 0`), so TCP takes what each link has while the plan
runs.  Where the text is silent (the planner's own rule) we choose this;
`hold_iterations: 0` turns it off.  `results/planner-figure/README.md`
measures it on NetStorm's 9-DC WAN redrawn every 10 s.

On a volatile WAN a plan's shares are wrong for part of every
synchronization whatever rates it is made on: a plan holds its shape
until the next boundary, and the links are redrawn under it
(`benchmarks/volatile_plans.py`: on NetStorm's WAN redrawn every 10 s,
plans on the rates now, their recent highest or mean take 2.0-2.4x t_lb
of the links as they were, a plan knowing each link's mean over its own
synchronization 1.56x).  So with `multipath: 1` a volatile plan also
carries auxiliary paths, and a DC's server sends a segment over one when
the connection it is planned on is backed up: NetStorm's rule
(`netstorm_node.route`: more than 2 `queue_limit` segments queued to the
primary next hop, fewer than `queue_limit` to the detour's first), the
same paths (`netstorm.routes_between`, on the estimates, through DCs whose
servers relay), of at most `detour_hops` connections.  Where the text is
silent (its plans are fixed), we borrow this from NetStorm; a steady WAN's
plan carries no detours.  It is off by default: on the 10 s WAN, three
runs with it took 2.58-2.87x t_lb as the links were (about 900 segments
detoured in each), two without it 2.75x and 2.78x, in one session
(`results/planner-figure/README.md`): no gain beyond the runs' spread.

With `backfill: 1` a volatile plan also gives every slice a second pair
of trees to the same root (`backfill_trees`: the cheapest arborescences
where each link costs the time a byte takes on it, `backfill_overlap`
times as much where the slice's own tree of that kind crosses it), and
runs on `agents/dataplane/backfill`: a segment's sum goes up whichever
lane completes first, backup copies go at a lower priority, later
segments first, only while the kernel holds less than `backfill_gate`
bytes for the connection, and only once a node has `backfill_after` of
the iteration's new values; copies overtaken are dropped from the queue.
Where the text is silent (its plans are fixed), we choose this.  It is
off by default: on the 10 s WAN it gained nothing (3.05x `t_lb` pooled
over three draws with it and without it), since a plan's slices there
finish within the last half of a synchronization and leave a backup
little to take (`results/planner-figure/README.md`).

With `dispatch: 1` a plan does not fix any tree's share: from the first
plan on estimates (judging a WAN volatile takes some three iterations,
which would run meanwhile on a plan that holds its shape), it is a
family of slices, unpaced, those of the plans on four readings of the links
(`optimal_policy.readings`: the planner's own reading, the highest
within `estimate_memory`, the mean within `volatile_memory`, and every
link at that mean's mean; `family_policy`), and the model is cut into blocks of `dispatch_block`
elements that the coordinator gives to slices while the iteration runs
(`agents/overlay/dispatcher`, `agents/dataplane/dispatch`):
`dispatch_window` blocks to every slice at the start, fastest first,
then each time one of a slice's blocks has reached every worker, that
slice's next, as many as its window now holds: each window steered by
the probes' last trains (`dispatch_steer`, the default, below), or, with
`dispatch_steer: 0` and `dispatch_control: 1`, widened or narrowed once a
round trip as TCP Vegas does (`dispatch_alpha`, `dispatch_beta`; with
`dispatch_slow_start: 1`, from Vegas' slow start, `dispatch_gamma`; with
`dispatch_tail: 1`, near the end, none to a slice that would still
carry it after the others have drained the rest).  A slice
whose links are fast now thus carries more, and the family has trees for
more of the rates a redraw brings: in the fluid model
(`benchmarks/volatile_plans.py`, the 10 s WAN, 2.5 MB, 37 start times)
the family dispatched takes a median 1.41x t_lb, the `max` plan's own
slices dispatched 1.81x, and the `max` plan fixed 2.15x, though a fixed
plan's time there lets each link carry its share whenever it can, which
no tree's link does while the tree's other links wait.  A block is
smaller than a fixed plan's segment: a slice's next block waits for its
last to come down, so the blocks in flight must cover each slice's
round trip, and large ones put most of the model in flight at once
(measured in `results/planner-figure/README.md`).  Where the text is
silent (its plans are fixed), we choose this.  Dispatch is off by
default.  With Vegas' windows it measured, on the 10 s WAN, 2.51x
`t_lb` pooled over two runs on each of three draws against NetStorm's
3.03x (1.21x its speed); one run on each took 3.08x without dispatch,
and 2.81x dispatched with fixed windows of three blocks.

With `dispatch_steer: 1` no Vegas rule sets the windows.  At the release,
and at each read of the probes while the iteration runs, the coordinator
takes each DC pair's last probe train (not the estimate, the median of
three, which follows a redraw only after two trains that deviate, some
5 s), finds the rates of the family's slices that together carry the
most the links allow at those readings (`family_rates`, an LP over the
slices; most come out 0), and gives each slice `dispatch_headroom` times
its rate over one round trip of a block (its propagation delay plus
`dispatch_turnaround`) as its window, in blocks (`steered_windows`).
Why: traced on the 10 s WAN, the best mix of a family's own slices on
the rates of each second carried 58-107 blocks a second where Vegas'
windows, spread over every slice, carried about 50, and as much as a
plan made anew on those rates.  Where the text is silent we choose this.
It is the default under `dispatch: 1` (`dispatch_steer: 0` gives the
windows to Vegas): pooled over two runs on each of three draws of the
10 s WAN, 2.11x `t_lb` against NetStorm's 3.18x, 1.51x its speed, and on
the static WAN at a quarter of the rates 1.43x against the fixed plan's
1.47x (`testbed reproduce planner-dynamic`).

`trace_pieces: 1` has every node log when each piece's segments arrived
from each peer, per iteration (`agents/dataplane/driver.py`): where a
slice waited on its way through the trees.
"""

import math

from agents.overlay import netstorm as ns
from agents.planning.lp import LP
from agents.planning.packing import arc_delays, tree_packings
from agents.planning.wan import Wan

NAME = "optimal"
DESCRIPTION = "our planner: the best multi-root tree packing from estimates, paced per connection"
DYNAMIC = True
ACK_SHARE = 66 / (2 * 1514)     # a delayed ACK's frame per two full frames the other way
MESSAGE_HEADER_BYTES = 220      # a segment's JSON header (196-207 bytes measured) and ZeroMQ's framing
OPTIONS = {"keep": 2, "trade_rate": 1, "pipeline": 4, "min_segment": 4096, "fill_aware": 1.0,
           "pace": 1, "pace_share": 1.0, "check_period": 2.0, "update_change": 0.25, "estimate_memory": 8.0,
           "rtt_memory": 60.0, "settle_readings": 3,
           "replan": 1, "hold_iterations": 2.0, "volatile_memory": 60.0, "volatile_pace": 0,
           "trace_pieces": 0, "kernel_pace": 0.0, "overheads": 0,
           "multipath": 0, "queue_limit": 1, "detour_hops": 2, "backfill": 0, "backfill_overlap": 4.0,
           "backfill_gate": 65536, "backfill_after": 0.5, "dispatch": 0, "dispatch_window": 2,
           "dispatch_tail": 0, "dispatch_block": 1024,
           "dispatch_control": 1, "dispatch_alpha": 1.0, "dispatch_beta": 3.0, "dispatch_window_max": 64,
           "dispatch_slow_start": 0, "dispatch_gamma": 1.0,
           "dispatch_steer": 1, "dispatch_headroom": 2.0, "dispatch_turnaround": 0.2}
RANGES = {"keep": (1, 64), "trade_rate": (0, 1), "pipeline": (1, 1024), "min_segment": (1, 10**9),
          "fill_aware": (0.0, 1.0),
          "pace": (0, 1), "pace_share": (0.1, 10.0), "check_period": (0.1, 3600.0),
          "update_change": (0.0, 10.0), "estimate_memory": (0.0, 3600.0),
          "rtt_memory": (0.0, 3600.0), "settle_readings": (0, 3), "replan": (0, 1),
          "hold_iterations": (0.0, 1000.0), "volatile_memory": (0.0, 3600.0), "volatile_pace": (0, 1),
          "trace_pieces": (0, 1), "kernel_pace": (0.0, 4.0), "overheads": (0, 1),
          "multipath": (0, 1), "queue_limit": (1, 10**4), "detour_hops": (2, 64), "backfill": (0, 1),
          "backfill_overlap": (1.0, 1000.0), "backfill_gate": (1, 10**9),
          "backfill_after": (0.0, 1.0), "dispatch": (0, 1), "dispatch_window": (1, 64),
          "dispatch_tail": (0, 1), "dispatch_block": (1, 10**9),
          "dispatch_control": (0, 1), "dispatch_alpha": (0.0, 1000.0), "dispatch_beta": (0.0, 1000.0),
          "dispatch_window_max": (1, 4096), "dispatch_slow_start": (0, 1), "dispatch_gamma": (0.0, 1000.0),
          "dispatch_steer": (0, 1), "dispatch_headroom": (0.1, 100.0), "dispatch_turnaround": (0.0, 60.0)}

servers_by_dc = ns.servers_by_dc
overlay_dcs = ns.overlay_dcs
takes_part = ns.takes_part


def option(layout, key):
    return layout.option(key, OPTIONS[key])


def refuse(server_counts, worker_counts):
    """Why these DCs cannot run the planner, or None: every DC with workers
    needs a server to sum them and to relay; transit DCs only forward."""
    bare = [dc for dc, n in worker_counts.items() if n and server_counts.get(dc, 0) < 1]
    if bare:
        return (f"optimal sums each DC's workers at its server, and {', '.join(bare)} "
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
    many optima, so where the pruning starts decides how much rate it keeps
    (on the 9-DC WAN, from the first plan's trees it once kept 585 of the
    676 kB/s the LP reached, and 675 from a fresh start)."""
    wan = wan_of_estimates(speeds, delays, order, layout)
    start = [(s["root"], kind, tuple(map(tuple, s[kind])))
             for s in (previous or {}).get("slices", ()) for kind in ("reduce", "broadcast")]
    trade = [k / 10 for k in range(1, 6)] if option(layout, "trade_rate") else []
    paths = route_paths(layout, order)
    delay = arc_delays(wan, paths)
    plans = []
    for begin in ([[], start] if start else [[]]):
        packings = tree_packings(wan, paths=paths, keeps=range(1, option(layout, "keep") + 1), start=begin,
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
    share = option(layout, "fill_aware")
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
    if not option(layout, "fill_aware"):
        return 4 * layout.size / policy["rate"] + policy["latency"]
    return finishing([s["rate"] for s in policy["slices"]], planned_fills(policy, layout), layout.size)[0]


def segment_of(policy, layout):
    """Elements per segment: every slice, sized by rate, in at least
    `pipeline` segments per hop of its reduce-plus-broadcast depth, but no
    smaller than `min_segment`; a dispatched policy's blocks are
    `dispatch_block` elements."""
    if policy.get("dispatch"):
        return int(option(layout, "dispatch_block"))
    sizes = slice_sizes([s["rate"] for s in policy["slices"]], layout.size)
    finest = min((n / (option(layout, "pipeline") * hops(s))
                  for s, n in zip(policy["slices"], sizes) if n > 0), default=layout.size)
    return max(int(option(layout, "min_segment")), int(finest), 1)


def plan_of(policy, layout, backup=False):
    """The Plan of a policy: one piece per slice (see the module docstring);
    with `backup`, the same pieces over the slices' backfill trees."""
    from agents.dataplane.plan import Plan
    pieces, start = [], 0
    for s, n in zip(policy["slices"], sizes_of(policy, layout)):
        if n == 0:
            continue
        pieces.append(slice_piece(s, start, start + n, layout, backup))
        start += n
    return Plan(layout.size, tuple(layout.worker_names), tuple(pieces)).validate()


def slice_piece(s, start, stop, layout, backup=False):
    """A slice's trees over the agents as a Piece of elements start..stop:
    every worker sums into its DC's server, the servers as the slice's
    reduce tree (or its backfill tree), and the new values go down its
    broadcast tree, each server also feeding its DC's workers."""
    from agents.dataplane.plan import Piece
    nodes = servers_by_dc(layout)
    workers_in = {}
    for w, dc in layout.workers:
        workers_in.setdefault(dc, []).append(w)
    up, down = ("backup_reduce", "backup_broadcast") if backup else ("reduce", "broadcast")
    parent = {w: nodes[dc] for w, dc in layout.workers}
    parent.update({nodes[u]: nodes[v] for u, v in s[up]})
    children = {}
    for u, v in s[down]:
        children.setdefault(nodes[u], []).append(nodes[v])
    for dc in {s["root"]} | {v for _, v in s[down]}:
        children.setdefault(nodes[dc], []).extend(sorted(workers_in.get(dc, [])))
    return Piece(start, stop, nodes[s["root"]], parent, {k: sorted(v) for k, v in sorted(children.items())})


def family_trees(policy, layout):
    """Every slice of a dispatched policy as a Piece over the whole model
    (`agents/dataplane/dispatch`: a block's range is its own), each
    checked as a Plan of its own."""
    from agents.dataplane.plan import Plan
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
    headroom, turnaround = option(layout, "dispatch_headroom"), option(layout, "dispatch_turnaround")
    out = [math.ceil(headroom * r * (s.get("delay", 0.0) + turnaround) / block - 1e-9) if r > 0 else 0
           for s, r in zip(policy["slices"], rates)]
    if out and max(out) < 1:
        out[max(range(len(out)), key=lambda k: rates[k])] = 1
    return out


def blocks_of(policy, layout):
    """How many blocks a dispatched policy cuts the model into: its segments."""
    from agents.dataplane.tree import segments
    return len(segments(0, layout.size, segment_of(policy, layout)))


def detour_routes(policy, speeds, order, layout):
    """{"a>b": [[a, b], auxiliary path, ...]} for every connection a -> b of
    `policy`: the connection itself first, then NetStorm's auxiliary paths
    between a and b over the WAN's links among the DCs in `order` (those
    with a server to relay), at their estimated `speeds`, each of at most
    `detour_hops` connections and none through a DC the routers' own path
    crosses (a relay there would put the bytes back on the same links)."""
    among = {link: v for link, v in speeds.items() if link[0] in order and link[1] in order and v > 0}
    adjacent = ns.neighbours(among, order)
    most = option(layout, "detour_hops")
    out = {}
    for key in policy["loads"]:
        a, b = key.split(">")
        crossed = set(layout.routes.get(key, [a, b])[1:-1])
        aux = [list(p) for p in ns.routes_between(adjacent, among, a, b)
               if 2 < len(p) <= most + 1 and not set(p[1:-1]) & crossed]
        out[key] = [[a, b]] + aux
    return out


def backfill_trees(policy, speeds, order, layout):
    """Give every slice of `policy` a backfill reduce and broadcast tree
    rooted at its root (`agents/dataplane/backfill`): the cheapest
    arborescences over the overlay DCs in `order`, where a connection costs
    the time a byte takes on each link of the routers' path at the
    estimated `speeds`, summed, a link that a connection of the slice's own
    tree of that kind crosses counted `backfill_overlap` times; so the
    backup goes around the links the primary depends on where other paths
    exist.  Where the text is silent (its plans are fixed), we choose this.
    Where links with no estimated rate leave a DC unreachable, no slice
    gets a backup: a plan's slices all have one or none."""
    from agents.planning.arborescence import NoArborescence, cheapest_arborescence
    penalty = option(layout, "backfill_overlap")
    paths = {arc: list(zip(path, path[1:])) for arc, path in route_paths(layout, order).items()}
    paths = {arc: links for arc, links in paths.items() if all(speeds.get(link, 0) > 0 for link in links)}
    for s in policy["slices"]:
        for kind in ("reduce", "broadcast"):
            crossed = {link for u, v in s[kind] for link in paths.get((u, v), [(u, v)])}
            cost = {(a, b): sum((penalty if link in crossed else 1.0) / speeds[link] for link in links)
                    for (a, b), links in paths.items()}
            try:
                if kind == "broadcast":
                    tree = cheapest_arborescence(order, s["root"], cost)
                    s["backup_broadcast"] = sorted([u, v] for u, v in tree)
                else:                    # an in-tree: the out-tree of the arcs turned round
                    tree = cheapest_arborescence(order, s["root"], {(b, a): c for (a, b), c in cost.items()})
                    s["backup_reduce"] = sorted([v, u] for u, v in tree)
            except NoArborescence:
                for t in policy["slices"]:
                    t.pop("backup_reduce", None)
                    t.pop("backup_broadcast", None)
                return policy
    return policy


def usable_share(layout):
    """The share of a link's estimated payload rate the plan may load: what
    the probes, the reverse direction's ACKs and the segments' headers
    leave (module docstring); 1 with `overheads: 0`."""
    if not option(layout, "overheads"):
        return 1.0
    segment = 4 * option(layout, "min_segment")
    return (1.0 - layout.probe_share - ACK_SHARE) * segment / (segment + MESSAGE_HEADER_BYTES)


def connection_rates(policy, dc, layout):
    """{peer server: bit/s} this DC's server paces its connections to (none
    when `pace` is 0, or the policy was made before every link had an estimate)."""
    if not option(layout, "pace") or not policy.get("pace", True):
        return {}
    nodes = servers_by_dc(layout)
    share = option(layout, "pace_share")
    return {nodes[v]: load * 8 * share for key, load in policy["loads"].items()
            for u, v in [key.split(">")] if u == dc}


# The overlay's two sides, which use the functions above.
from agents.overlay.optimal_node import Node  # noqa: E402,F401
from agents.overlay.optimal_policy import Policy  # noqa: E402,F401
