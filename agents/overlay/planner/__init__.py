"""The planner: a multi-root tree packing made from the network's own
estimates, cut into a few explicit trees, each carrying a slice of the
model at its planned rate.  A heuristic that gets close to the best
achievable synchronization, not an optimum: `testbed bound` gives t_opt
and t_lb to judge it against.

Sources: TREE-OPT as `agents/planning/packing.py` states it (multi-root
fractional arborescence packing, reduce and broadcast concurrently, trees
by column generation with the cheapest spanning arborescence as the
pricing step; Edmonds' branching theorem for why trees suffice), the
overlay-over-underlay model of Marfoq et al. (NeurIPS 2020), and mTree's
"few trees with workload proportions" (Luo et al., IEEE TNSE 2024).
Where these texts are silent (they plan in a fluid model with fixed
trees), the choices below are ours.

What it reads (`policy`): every number is estimated, never configured.  A
link direction's payload rate is the probes' packet-train estimate of the
DC pair it joins (the highest within `estimate_memory` seconds: trains
that cross a link the plan keeps full read less than it carries), or,
where no pair is routed over just that link, the fastest pair routed
across it (a floor).  A connection's delay is half the least RTT read
within `rtt_memory` seconds (the propagation delay, as TCP Vegas's
BaseRTT and BBR's min_rtt take it).  Connections follow the routers'
paths (`layout.routes`).

The plan (`plan`):
- every root keeps its `keep` heaviest in- and out-trees (rates solved
  again over those), each count from 1 to `keep` solved; with
  `trade_rate`, packings that give up 10-50% of the rate for shallower
  trees too; of them all, the plan whose slices finish soonest is kept;
- a root's in-trees and out-trees are paired by weight (north-west corner
  rule): a pair is one reduce tree and one broadcast tree sharing a slice;
- slices are sized to finish together: a slice of n bytes at rate w takes
  f + n / w, its fill f being one segment's store-and-forward on each hop
  of its deepest path plus that path's delay (`fill_aware` scales the
  fills counted; 0 sizes by rate alone);
- a slice is cut into at least `pipeline` segments per hop, none smaller
  than `min_segment` elements, so the trees' stages overlap;
- every connection between two DCs' servers is paced at `pace_share`
  times its planned load (`pace: 0` leaves TCP to share), so connections
  that share a link keep the shares the plan gave.

Re-planning follows NetStorm's policy-switch protocol: every
`check_period` seconds the coordinator re-plans when a link's estimate
moved by more than `update_change`; the new plan takes effect at the next
iteration all nodes agree on.  A plan made before every link had an
estimate, or before every pair's estimate settled (`settle_readings`
trains), is made again once they have.  Re-plans are solved in a child
process (`agents/planning/offload`), off the coordinator's loop.

A volatile WAN (estimates stepping more often than once per
`hold_iterations` iterations, `agents/planning/volatility`) is planned on
the highest reading within `volatile_memory` seconds, unpaced unless
`volatile_pace`.  With `dispatch` other than `off`, a plan is a family of
slices (plans on several readings of the links) and the coordinator gives
blocks of `dispatch_block` elements to slices while the iteration runs
(`dispatcher`): with fixed windows of `dispatch_window` blocks, windows set
as TCP Vegas sets a connection's (`vegas`), or windows steered by the
rates the family's slices would have on the probes' latest trains
(`steer`).  What each choice measured is in `results/planner-dynamic`'s
README and in the history of `results/planner-figure`'s.
"""

from agents.overlay.base import DynamicOverlay
from agents.overlay.planner import plan as _plan
from agents.overlay.planner.node import Node
from agents.overlay.planner.options import OPTIONS
from agents.overlay.planner.policy import Policy


class Planner(DynamicOverlay):
    NAME = "planner"
    DESCRIPTION = "our planner: a multi-root tree packing from estimates, paced per connection"
    OPTIONS = OPTIONS

    def refuse(self, servers, workers):
        return _plan.refuse(servers, workers)

    def takes_part(self, name, layout):
        return _plan.takes_part(name, layout)

    def node(self, name, layout, segment, fold, coordinator):
        return Node(name, layout, segment, fold, coordinator)

    def policy(self, layout, seed=0):
        return Policy(layout, seed)
