"""An executor whose trees are chosen per block while the iteration runs:
the model is cut into blocks (segments of the whole vector), a family of
slices (a reduce tree and a broadcast tree to one root each) is fixed by
the plan, and which slice carries a block is decided by a dispatcher (the
coordinator: the planner's `agents/overlay/planner/dispatcher`) as the
iteration goes, announced to the contributors block by block and to the
other nodes once every block is given out (`assign`).

Why: on a WAN whose rates change within a synchronization, a plan that
fixes each tree's share of the model is wrong for part of every
synchronization, whatever it was made on; the dispatcher gives a slice
its next block when one of its blocks has reached every contributor, so
slices whose links are fast now carry more, and a family drawn from
plans on several readings of the links has trees for more of the rates
a redraw can bring.

What stays exact:
- a block is summed under one slice: every contributor sends its part of
  a block only once the block's slice is announced, and every node keeps
  the first announcement (a second, different one is an error); the
  messages carry the slice, so a node may take a partial sum before its
  own announcement arrives;
- sums are made in a fixed order per slice (own contribution, then
  children by name, `tree.sum_in_order`), and the root folds a block only
  with exactly N contributions, as in `TreeNode`;
- a node is done with an iteration once every block is announced and it
  has sent up or folded each block its slice's reduce tree gives it, and
  holds the new values of each block its slice's broadcast tree gives it.

Messages: `TreeNode`'s agg and dist, with `piece` the slice and `seg` the
block; the dispatcher's `ns_assign` (it, blocks [[block, slice], ...]);
and a contributor tells the dispatcher each time a block's new values
reach it (`arrived`, a message the node that runs this executor makes).
"""


from agents.dataplane.node import ExecutorNode
from agents.dataplane.tree import AggregationError, Iteration, gather, hear, segments, take_own

ASSIGN = "ns_assign"       # the dispatcher's announcement: it, blocks [[block, slice], ...]
ARRIVED = "ns_arrived"     # a contributor's word to the dispatcher: it, piece (slice), seg (block)


class _Iteration(Iteration):
    """`tree.Iteration`, keyed by block, with each block's slice and this
    contributor's vector kept for the blocks announced later."""

    def __init__(self):
        super().__init__(owed=0)   # each announced block adds its parts (may dip below 0 meanwhile)
        self.slice_of = {}         # block -> slice, as announced
        self.carried_by = {}       # block -> slice, as its messages said
        self.contribution = None
        self.own_stop, self.own_started = False, 0.0


class DispatchNode(ExecutorNode):
    """One node's part under a family of slices (`Piece`s whose element
    ranges are not used: a block's range is its own).  `fold` as
    `TreeNode`'s; `arrived(it, slice, block)` -> the message that tells
    the dispatcher a block's new values reached this contributor."""

    def __init__(self, name, slices, contributors, size, segment, fold=None, arrived=None):
        self.name = name
        self.slices = slices
        self.size = size
        self.fold = fold
        self.arrived = arrived
        self.contributors = tuple(contributors)
        self.contributor = name in self.contributors
        self.n = len(self.contributors)
        self.blocks = segments(0, size, segment)
        everyone = set(self.contributors)
        self.expected = {}
        self.child_counts, self.sum_order, self.dist_from, self.needs_values = [], [], [], []
        for s, p in enumerate(slices):
            if p.in_aggregation(name):
                below = p.subtree_contributors(name, everyone)
                if below:
                    self.expected[s] = below
            counts = {c: p.subtree_contributors(c, everyone) for c in p.agg_children(name)}
            self.child_counts.append(counts)
            self.sum_order.append(([name] if self.contributor else [])
                                  + sorted(c for c, k in counts.items() if k))
            self.dist_from.append(p.dist_parent(name))
            self.needs_values.append(self.contributor or p.in_distribution(name))
            if p.root == name and fold is None:
                raise ValueError(f"{name} is the root of slice {s} but has no sync rule")
        self.iterations = {}

    # ------------------------------------------------------------ queries

    def _it(self, it):
        if it not in self.iterations:
            self.iterations[it] = _Iteration()
        return self.iterations[it]

    def roots(self):
        return sorted({s for s, p in enumerate(self.slices) if p.root == self.name})

    def upstream(self):
        out = set()
        for s, p in enumerate(self.slices):
            out |= set(c for c, k in self.child_counts[s].items() if k)
            if self.dist_from[s]:
                out.add(self.dist_from[s])
        return sorted(out)

    def done(self, it):
        state = self.iterations.get(it)
        return state is not None and len(state.slice_of) == len(self.blocks) and state.owed == 0

    def result(self, it):
        state = self.iterations.pop(it)
        return state.values, state.stop_down, state.last_started

    # ------------------------------------------------------------ events

    def start(self, it, contribution=None, stop=False, started=0.0):
        state = self._it(it)
        if not self.contributor:
            return []
        take_own(self.name, self.size, state, it, contribution)
        state.contribution = contribution
        state.own_stop, state.own_started = bool(stop), started
        out = []
        for b, s in sorted(state.slice_of.items()):
            out += self._own(it, state, b, s)
        return out

    def assign(self, it, pairs):
        """Take the dispatcher's announcement [(block, slice)] for `it`."""
        state = self._it(it)
        out = []
        for b, s in pairs:
            if not 0 <= b < len(self.blocks) or not 0 <= s < len(self.slices):
                raise AggregationError(f"{self.name}: block {b} on slice {s} is outside the plan")
            if b in state.slice_of:
                if state.slice_of[b] != s:
                    raise AggregationError(f"{self.name}: block {b} of iteration {it} announced on "
                                           f"slices {state.slice_of[b]} and {s}")
                continue
            if state.carried_by.get(b, s) != s:
                raise AggregationError(f"{self.name}: block {b} of iteration {it} came on slice "
                                       f"{state.carried_by[b]} before it was announced on {s}")
            state.slice_of[b] = s
            state.owed += (s in self.expected) + self.needs_values[s]
            if state.contribution is not None:
                out += self._own(it, state, b, s)
        return out

    def on_message(self, sender, header, payload):
        if header["type"] == ASSIGN:
            return self.assign(header["it"], header["blocks"])
        kind, it, s, b = header["type"], header["it"], header["piece"], header["seg"]
        if not 0 <= b < len(self.blocks) or not 0 <= s < len(self.slices):
            raise AggregationError(f"{sender} sent block {b} on slice {s}, which the plan lacks")
        state = self._it(it)
        if state.slice_of.get(b, s) != s or state.carried_by.setdefault(b, s) != s:
            raise AggregationError(f"{sender} sent block {b} of iteration {it} on slice {s}, "
                                   f"not the slice it is carried by")
        if kind == "agg":
            if self.child_counts[s].get(sender) is None:
                raise AggregationError(f"{sender} is not a child of {self.name} in slice {s}")
            hear(state, b, sender, header["count"], self.child_counts[s][sender], self.name,
                 lambda: f"block {b} of iteration {it} in slice {s}")
            return self._add(it, state, b, s, sender, payload, header["count"], header["stop"],
                             header["started"])
        if kind == "dist":
            if sender != self.dist_from[s]:
                raise AggregationError(f"{sender} is not {self.name}'s parent in slice {s}")
            return self._down(it, state, b, s, payload, header["stop"], header["started"])
        raise AggregationError(f"unknown data-plane message {kind!r} from {sender}")

    # ------------------------------------------------------------ internals

    def _own(self, it, state, b, s):
        lo, hi = self.blocks[b]
        return self._add(it, state, b, s, self.name, state.contribution[lo:hi], 1, state.own_stop,
                         state.own_started)

    def _add(self, it, state, b, s, source, values, count, stop, started):
        if b in state.sent_up:
            raise AggregationError(f"{self.name}: a contribution to block {b} of iteration {it} "
                                   f"arrived after it was complete")
        if s not in self.expected:
            raise AggregationError(f"{self.name} sums nothing of slice {s}")
        complete = gather(state, self.sum_order[s], b, source, values, count, stop, started,
                          self.expected[s], self.contributor,
                          lambda: f"{self.name}: block {b} of iteration {it}")
        if complete is None:
            return []
        total, count, stop, started = complete
        state.sent_up.add(b)
        state.owed -= 1
        p = self.slices[s]
        if p.root != self.name:
            return [(p.parent[self.name], {"type": "agg", "it": it, "piece": s, "seg": b, "count": count,
                                           "stop": stop, "started": started}, total)]
        state.folded_at_root(self.name, count, self.n, f"block {b} of iteration {it}")
        lo, hi = self.blocks[b]
        return self._down(it, state, b, s, self.fold(lo, hi, total, count), stop, started)

    def _down(self, it, state, b, s, values, stop, started):
        if b in state.down:
            raise AggregationError(f"{self.name}: new values of block {b} of iteration {it} arrived twice")
        values = state.take_down(b, self.needs_values[s], self.blocks[b], values, stop, started)
        header = {"type": "dist", "it": it, "piece": s, "seg": b, "stop": bool(stop), "started": started}
        out = [(kid, header, values) for kid in self.slices[s].children.get(self.name, ())]
        if self.contributor and self.arrived is not None:
            out.append(self.arrived(it, s, b))
        return out
