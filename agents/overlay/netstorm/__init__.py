"""NetStorm's control logic: routes, FAPT trees, the root metric and the
multi-root split, as pure functions of per-direction link speeds.

Source: Li et al., "Accelerating Geo-distributed Machine Learning with
Network-Aware Adaptive Tree and Auxiliary Route" (IEEE/ACM ToN 2024) as its
authors' public code implements it (ps-lite `van.cc`: route computation,
the root metric and the policy decision; the kvstore's key division).

- **Routes.** For every ordered DC pair (i, j), every simple path in the WAN
  graph, found by depth-first search trying neighbours in DC order.  A
  path's cost is the sum over its links of 1 / speed (seconds per byte,
  store and forward).  The cheapest is the primary path; the auxiliary
  paths are the next cheapest whose intermediate DCs are disjoint from
  those of every path already taken.  Ties go to the path found first.
- **FAPT of root r.** DC j's parent is the first hop of j's primary path
  *to* r (speeds j -> r).
- **Root metric.** The links of r's primary paths *from* r to every other
  DC (speeds r -> j), each counted once, grouped by hop depth;
  T(r) = sum over depths of 1 / (slowest link at that depth) and
  perf(r) = 1 / T(r).  The R best roots keep their perf, the others get 0.
  The code does not say how equal metrics are ranked; here ties go to the
  later DC in DC order, which is what reproduces the authors' reference
  output (`R = 1` keeps DC 7 of 5 and 7, `R = 3` keeps DC 8 of 2, 4, 6, 8).
- **Split.** The flat model is cut into pieces of at most `piece` elements
  (MXNet's big-array bound, 1,000,000); root r's quota is
  ceil(perf(r) / sum(perf) x size) elements, and pieces go in order
  round-robin over the roots (in DC order) that have quota left.  Every
  node computes the same split from the same perf vector.

As an overlay (`overlay: netstorm`): every DC runs a server, and the
servers are the overlay's nodes; a worker talks only to its DC's server.
Each piece is reduced up its root's tree (a server sends one message per
piece to its parent once it holds its children's and its own workers'
contributions) and sent back down the same tree; the root only sums, and
every worker applies the sync rule to the sum itself (the authors' trainer
steps on the workers), so roots can move between iterations without state
to hand over.  The coordinator (`policy`) re-plans from the link
speeds the servers measure and releases each iteration with the policy
version all nodes use for it (`node`).  Options, with the
authors' defaults: `roots` (R, 0 = all), `piece`, `multipath` (1/0),
`queue_limit` (L), `sample_bytes`, `samples`, `report_change`,
`check_period`, `update_change`, and `replan` (0 freezes the first policy:
an ablation, not in the original).

`python -m agents.overlay.netstorm FILE.json` reads a graph (`links_mbit`
with keys "1-2" for symmetric links, or `links_mbit_per_direction` with
keys "1->2") and prints perf with all, three and one roots, every root's
tree and the paths from the first DC to the last, in the shape of
`static-9dc.json` the authors' numbers were checked against.
"""

from agents.overlay.base import DynamicOverlay
from agents.overlay.netstorm import plan as _plan
from agents.overlay.netstorm.node import Node
from agents.overlay.netstorm.policy import Policy


class NetStorm(DynamicOverlay):
    NAME = "netstorm"
    DESCRIPTION = "NetStorm: multi-root FAPT trees from measured link speeds, multipath relays"
    OPTIONS = _plan.OPTIONS

    def refuse(self, servers, workers):
        return _plan.refuse(servers, workers)

    def takes_part(self, name, layout):
        return _plan.takes_part(name, layout)

    def node(self, name, layout, segment, fold, coordinator):
        return Node(name, layout, segment, fold, coordinator)

    def policy(self, layout, seed=0):
        return Policy(layout, seed)
