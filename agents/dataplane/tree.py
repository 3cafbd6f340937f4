"""The executor for plans of fixed trees: one node's part of every
iteration, as a state machine that takes messages and returns the
messages to send (no sockets here, so a test can deliver in any order).

Per piece the model is cut into segments of at most `segment` elements:
the unit that is summed, forwarded and counted.  A node adds its own
contribution and each child's partial sum into one accumulator per
segment and sends the segment up as soon as it holds every contribution
of its subtree, so a relay forwards segment i while segment i+1 is still
on its way and a tree of depth d does not cost d whole transfers.  The
root folds a complete segment in with the sync rule only when it holds
exactly N contributions, then sends the new values down the distribution
tree, whose nodes forward each segment as it arrives.

Sums are made in one fixed order (the node's own contribution, then its
children by name) whatever order they arrive in: a partial sum that
arrives early waits until those before it are in.  So the same
contributions give bit-identical results however the network delivers
them, and a run can be compared with another bit for bit.

Messages (header fields; the payload is the segment's float32 values):
  agg   it, piece, seg, count, stop, started   a partial sum of `count` contributions
  dist  it, piece, seg, stop, started          new values from the root
`stop` is any contributor's wish to end training, or-ed on the way up and
handed back down, so every node ends after the same iteration.  `started`
is the latest time a contributor in the sum began its synchronization
(monotonic clocks are shared by all namespaces of the machine): a worker
tells from it how long it waited for the slowest one.
"""

import numpy as np

from agents.dataplane.node import ExecutorNode


class AggregationError(RuntimeError):
    """A segment was counted with more or fewer contributions than it should."""


def segments(start, stop, segment):
    return [(a, min(a + segment, stop)) for a in range(start, stop, segment)]


def take_own(name, size, state, it, contribution):
    """Check a contributor's vector for iteration `it` and mark it in
    `state`, whose `values` will hold the new model."""
    if contribution is None or contribution.size != size:
        raise ValueError(f"{name} must contribute a vector of {size} values")
    if state.own:
        raise AggregationError(f"{name} contributed twice to iteration {it}")
    state.own = True
    state.values = np.empty(size, np.float32)


def gather(state, order, key, source, values, count, stop, started, want, contributor, where):
    """Add a source's partial sum of `count` contributions to segment
    `key` (in `order`, `sum_in_order`), or-ing its stop wish and keeping
    the latest start; once the segment holds the `want` contributions of
    this node's subtree (its own among them for a `contributor`), take it
    out of `state` and return (sum, count, stop, started), else None.
    `where()` names the segment in the error for too many contributions
    (formatted only then: this runs for every message)."""
    sum_in_order(state, order, key, source, values)
    state.count[key] = state.count.get(key, 0) + count
    state.stop[key] = state.stop.get(key, False) or bool(stop)
    state.started[key] = max(state.started.get(key, 0.0), started)
    if state.count[key] > want:
        raise AggregationError(f"{where()} holds {state.count[key]} contributions, more than {want}")
    if state.count[key] < want or (contributor and not state.own):
        return None
    state.summed.pop(key)
    return state.acc.pop(key), state.count.pop(key), state.stop.pop(key), state.started.pop(key)


def hear(state, key, sender, count, want, name, what):
    """Record a child's partial sum of segment `key` at node `name`,
    refusing a second one from the same child and one that holds other
    than the `want` contributions of the child's subtree; `what()` names
    the segment (formatted only then)."""
    heard = state.heard.setdefault(key, set())
    if sender in heard:
        raise AggregationError(f"{sender} sent {what()} to {name} twice")
    heard.add(sender)
    if count != want:
        raise AggregationError(f"{sender}'s partial sum of {what()} holds {count} contributions, not the "
                               f"{want} of its subtree")


def sum_in_order(state, order, key, source, values):
    """Add `values` from `source` to segment `key`'s sum (`state.acc`) in
    `order`, holding it back (`state.early`) while a source before it is
    still missing; `state.summed` counts the sources in."""
    early = state.early.setdefault(key, {})
    early[source] = values
    done = state.summed.get(key, 0)
    while done < len(order) and order[done] in early:
        part = early.pop(order[done])
        if done == 0:
            state.acc[key] = np.array(part, dtype=np.float32)
        else:
            state.acc[key] += part
        done += 1
    state.summed[key] = done
    if not early:
        del state.early[key]


class Iteration:
    """One iteration's state at a node, keyed by segment (`TreeNode`'s
    (piece, seg); the other executors' own keys)."""

    def __init__(self, owed):
        self.acc = {}          # (piece, seg) -> float32 array: the sum of the first sources
        self.summed = {}       # (piece, seg) -> how many sources, in order, acc holds
        self.early = {}        # (piece, seg) -> {source: values} that came before their turn
        self.count = {}        # (piece, seg) -> contributions in acc
        self.stop = {}         # (piece, seg) -> or of the stop wishes in acc
        self.started = {}      # (piece, seg) -> latest start among the contributions in acc
        self.sent_up = set()   # (piece, seg) sent to the parent or folded at the root
        self.heard = {}        # (piece, seg) -> children whose partial sum arrived
        self.down = set()      # (piece, seg) of new values held
        self.values = None     # the new model, for a contributor
        self.stop_down = False
        self.last_started = 0.0
        self.own = False
        self.owed = owed       # segments still to send up or to receive new values of

    def folded_at_root(self, name, count, n, what):
        """Check that the root `name` folds `what` with all `n` contributions."""
        if count != n:
            raise AggregationError(f"root {name}: {what} holds {count} contributions, not {n}")

    def take_down(self, key, needs, bounds, values, stop, started):
        """Record the new values of `key` (elements `bounds` of the model),
        which this node owed itself if `needs`: the values to pass down."""
        self.down.add(key)
        self.owed -= needs
        self.stop_down = self.stop_down or bool(stop)
        self.last_started = max(self.last_started, started)
        if self.values is not None:
            a, b = bounds
            self.values[a:b] = values
        return np.ascontiguousarray(values, dtype=np.float32)


class TreeNode(ExecutorNode):
    """One node's part of a Plan.  `fold(start, stop, total, count)` is the
    sync rule's root side (new values for that element range), needed only
    where this node is a root."""

    def __init__(self, name, plan, segment, fold=None):
        self.name = name
        self.plan = plan
        self.fold = fold
        self.contributor = name in plan.contributors
        self.n = len(plan.contributors)
        self.segs = []        # (piece index, seg index, start, stop)
        for i, p in enumerate(plan.pieces):
            for j, (a, b) in enumerate(segments(p.start, p.stop, segment)):
                self.segs.append((i, j, a, b))
        self.bounds = {(i, j): (a, b) for i, j, a, b in self.segs}
        contributors = set(plan.contributors)
        # A node whose subtree holds no contributor has nothing to send up.
        self.expected = {i: p.subtree_contributors(name, contributors)
                         for i, p in enumerate(plan.pieces) if p.in_aggregation(name)}
        self.expected = {i: n for i, n in self.expected.items() if n}
        self.agg_from = {i: set(p.agg_children(name)) for i, p in enumerate(plan.pieces)}
        self.child_counts = {i: {c: p.subtree_contributors(c, contributors)
                                 for c in self.agg_from[i]}
                             for i, p in enumerate(plan.pieces)}
        # The order a node sums in: its own contribution, then the children
        # that send (those with contributors below them) by name.
        self.sum_order = {i: ([name] if self.contributor else [])
                          + sorted(c for c, n in self.child_counts[i].items() if n)
                          for i in range(len(plan.pieces))}
        self.dist_from = {i: p.dist_parent(name) for i, p in enumerate(plan.pieces)}
        self.needs_values = {i: self.contributor or p.in_distribution(name)
                             for i, p in enumerate(plan.pieces)}
        # What a whole iteration asks of this node, counted down as it is done: `done` is
        # asked after every message, and a scan of every segment there made an iteration
        # cost the square of its segments.
        self.owed = sum((i in self.expected) + self.needs_values[i] for i, _, _, _ in self.segs)
        for i, p in enumerate(plan.pieces):
            if p.root == name and fold is None:
                raise ValueError(f"{name} is the root of piece {i} but has no sync rule")
        self.iterations = {}

    # ------------------------------------------------------------ queries

    def _it(self, it):
        if it not in self.iterations:
            self.iterations[it] = Iteration(self.owed)
        return self.iterations[it]

    def roots(self):
        """Indices of the pieces this node folds in."""
        return [i for i, p in enumerate(self.plan.pieces) if p.root == self.name]

    def piece_ranges(self):
        return [(p.start, p.stop) for p in self.plan.pieces]

    def upstream(self):
        """The agents whose messages this node waits for."""
        out = set()
        for i in range(len(self.plan.pieces)):
            out |= self.agg_from[i]
            if self.dist_from[i]:
                out.add(self.dist_from[i])
        return sorted(out)

    def done(self, it):
        """True once this node has played its whole part in iteration `it`."""
        state = self.iterations.get(it)
        return state is not None and state.owed == 0

    def result(self, it):
        """(new model vector or None, stop, the latest contributor's start)
        of a finished iteration; forgets it."""
        state = self.iterations.pop(it)
        return state.values, state.stop_down, state.last_started

    # ------------------------------------------------------------ events

    def start(self, it, contribution=None, stop=False, started=0.0):
        """Begin iteration `it` with this node's contribution (a contributor
        must give one: the flat vector).  Returns messages to send."""
        state = self._it(it)
        out = []
        if self.contributor:
            take_own(self.name, self.plan.size, state, it, contribution)
            for i, j, a, b in self.segs:
                out += self._add(it, state, i, j, self.name, contribution[a:b], 1, stop, started)
        return out

    def on_message(self, sender, header, payload):
        kind, it = header["type"], header["it"]
        i, j = header["piece"], header["seg"]
        if (i, j) not in self.bounds:
            raise AggregationError(f"{sender} sent piece {i} segment {j}, which the plan lacks")
        state = self._it(it)
        if kind == "agg":
            if sender not in self.agg_from[i]:
                raise AggregationError(f"{sender} is not a child of {self.name} for piece {i}")
            hear(state, (i, j), sender, header["count"], self.child_counts[i][sender], self.name,
                 lambda: f"piece {i} segment {j} of iteration {it}")
            return self._add(it, state, i, j, sender, payload, header["count"], header["stop"],
                             header["started"])
        if kind == "dist":
            if sender != self.dist_from[i]:
                raise AggregationError(f"{sender} is not {self.name}'s parent for piece {i}")
            return self._down(it, state, i, j, payload, header["stop"], header["started"])
        raise AggregationError(f"unknown data-plane message {kind!r} from {sender}")

    # ------------------------------------------------------------ internals

    def _add(self, it, state, i, j, source, values, count, stop, started):
        key = (i, j)
        if key in state.sent_up:
            raise AggregationError(f"{self.name}: a contribution to piece {i} segment {j} of "
                                   f"iteration {it} arrived after it was complete")
        complete = gather(state, self.sum_order[i], key, source, values, count, stop, started,
                          self.expected[i], self.contributor,
                          lambda: f"{self.name}: piece {i} segment {j} of iteration {it}")
        if complete is None:
            return []
        total, count, stop, started = complete
        state.sent_up.add(key)
        state.owed -= 1
        piece = self.plan.pieces[i]
        if piece.root != self.name:
            return [(piece.parent[self.name],
                     {"type": "agg", "it": it, "piece": i, "seg": j, "count": count, "stop": stop,
                      "started": started},
                     total)]
        state.folded_at_root(self.name, count, self.n, f"piece {i} segment {j} of iteration {it}")
        a, b = self.bounds[key]
        return self._down(it, state, i, j, self.fold(a, b, total, count), stop, started)


    def _down(self, it, state, i, j, values, stop, started):
        key = (i, j)
        if key in state.down:
            raise AggregationError(f"{self.name}: new values of piece {i} segment {j} of "
                                   f"iteration {it} arrived twice")
        values = state.take_down(key, self.needs_values[i], self.bounds[key], values, stop, started)
        header = {"type": "dist", "it": it, "piece": i, "seg": j, "stop": bool(stop),
                  "started": started}
        return [(kid, header, values) for kid in self.plan.pieces[i].children.get(self.name, ())]
