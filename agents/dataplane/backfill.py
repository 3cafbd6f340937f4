"""An executor of two trees per piece, the second a backfill: each piece is
summed up two aggregation trees that end at the same root, and the root
takes the sum that is complete first; the new values go down both
distribution trees, and a node keeps the first copy of each segment.

Why: a plan holds its slices' shares until the next iteration, and on a
WAN whose rates change within one synchronization the slice that meets a
slowed link finishes last while the links of the others stand idle.  The
backup lane's copies go at a lower priority (`priority_of`), so they take
only what a connection would leave idle, and in reverse segment order,
so they meet the primary lane from the other end of the piece; whichever
lane gets a segment to the root first carries it.  With `after` above 0,
a node holds its backup copies back until it has that share of the
iteration's new values: the segments still missing then are the slow
slices', and the backup's bandwidth goes to them rather than to every
piece's tail.  Where the text of the planner is silent (its plans are
fixed), we choose this.

What stays exact:
- one sum per segment: both lanes end at the same root, which folds the
  first one complete (with exactly N contributions) and drops the other;
  so every node gets the same values, and sums are made in a fixed order
  per lane (own contribution, then children by name), as in `TreeNode`;
- liveness without the backup lane: a primary partial sum is only ever
  dropped by a node that already holds the segment's new values, which
  exist only once the root has folded; the new values always go down the
  primary distribution tree, whose every node forwards its first copy
  there, so the backup lane can be lost entirely and the piece still
  finishes;
- a node whose subtree and parent are the same in both lanes (every
  worker under its DC's server) sends one partial sum, which counts in
  both (header lane 2), so the backup costs nothing inside a DC.

Messages are `TreeNode`'s (agg, dist) with `lane`: 0 primary, 1 backup,
2 both.  Every node of the plan must receive the new values (a relay that
did not could wait forever for a partial sum its children dropped).
"""


from agents.dataplane.tree import AggregationError, Iteration, TreeNode, gather, segments, take_own

PRIMARY, BACKUP, BOTH = 0, 1, 2


class _Iteration(Iteration):
    """`tree.Iteration`, keyed (lane, piece, seg) where a lane sums, with
    the backup copies held back."""

    def __init__(self, owed, held):
        super().__init__(owed)
        self.held = [] if held else None   # backup copies not yet sent; None once they go


class BackfillNode:
    """One node's part of a plan and its backup (a Plan with the same
    pieces and roots, other trees); `fold(start, stop, total, count)` is
    the root side of the sync rule."""

    def __init__(self, name, plan, backup, segment, fold=None, counters=None, after=0.0):
        if [(p.start, p.stop, p.root) for p in plan.pieces] != \
                [(p.start, p.stop, p.root) for p in backup.pieces] or \
                set(plan.contributors) != set(backup.contributors):
            raise ValueError("a backup plan must have the primary's pieces, roots and contributors")
        self.name = name
        self.plan = plan
        self.lanes = (plan, backup)
        self.after = after
        self.fold = fold
        contributors = set(plan.contributors)
        self.contributor = name in contributors
        self.n = len(contributors)
        self.segs = [(i, j, a, b) for i, p in enumerate(plan.pieces)
                     for j, (a, b) in enumerate(segments(p.start, p.stop, segment))]
        self.bounds = {(i, j): (a, b) for i, j, a, b in self.segs}
        self.per_piece = {i: len(segments(p.start, p.stop, segment)) for i, p in enumerate(plan.pieces)}
        self.expected, self.agg_from, self.child_counts, self.sum_order = {}, {}, {}, {}
        for lane, lp in enumerate(self.lanes):
            for i, p in enumerate(lp.pieces):
                if p.in_aggregation(name):
                    want = p.subtree_contributors(name, contributors)
                    if want:
                        self.expected[(lane, i)] = want
                kids = {c: p.subtree_contributors(c, contributors) for c in p.agg_children(name)}
                self.child_counts[(lane, i)] = kids
                self.agg_from[(lane, i)] = set(kids)
                self.sum_order[(lane, i)] = ([name] if self.contributor else []) + sorted(
                    c for c, k in kids.items() if k)
        # One partial sum serves both lanes where they agree on this node's
        # parent and on every arc below it (so its children send one too).
        self.shared = {i: self._below(plan.pieces[i]) == self._below(backup.pieces[i])
                       for i in range(len(plan.pieces))}
        self.dist_from = {i: {lp.pieces[i].dist_parent(name) for lp in self.lanes} - {None}
                          for i in range(len(plan.pieces))}
        self.dist_to = {}
        for i, p in enumerate(plan.pieces):
            first = list(p.children.get(name, ()))
            extra = [k for k in backup.pieces[i].children.get(name, ()) if k not in first]
            self.dist_to[i] = [(k, PRIMARY) for k in first] + [(k, BACKUP) for k in extra]
        self.needs_values = {i: self.contributor or any(lp.pieces[i].in_distribution(name)
                                                        for lp in self.lanes)
                             for i in range(len(plan.pieces))}
        for i, p in enumerate(plan.pieces):
            if not self.needs_values[i] and any((lane, i) in self.expected for lane in (PRIMARY, BACKUP)):
                raise ValueError(f"{name} sums piece {i} but gets none of its new values: "
                                 f"a backfilled plan needs every node to")
            if p.root == name and fold is None:
                raise ValueError(f"{name} is the root of piece {i} but has no sync rule")
        self.owed = sum(self.needs_values[i] for i, _, _, _ in self.segs)
        self.iterations = {}
        self.finished = set()
        # Segments this root folded from each lane (a dict the caller may share).
        self.counters = counters if counters is not None else {}
        self.counters.setdefault("folded_primary", 0)
        self.counters.setdefault("folded_backup", 0)

    def _below(self, piece):
        """This node's parent and the aggregation arcs of its subtree."""
        kids = {}
        for n, p in piece.parent.items():
            kids.setdefault(p, []).append(n)
        arcs, stack = {(self.name, piece.parent.get(self.name))}, [self.name]
        while stack:
            n = stack.pop()
            arcs.update((k, n) for k in kids.get(n, ()))
            stack.extend(kids.get(n, ()))
        return arcs

    # ------------------------------------------------------------ queries

    def _it(self, it):
        if it not in self.iterations:
            self.iterations[it] = _Iteration(self.owed, held=self.after > 0)
        return self.iterations[it]

    roots = TreeNode.roots                  # the primary plan's pieces and roots are the backup's
    piece_ranges = TreeNode.piece_ranges

    def upstream(self):
        out = set()
        for kids in self.agg_from.values():
            out |= kids
        for parents in self.dist_from.values():
            out |= parents
        return sorted(out)

    def done(self, it):
        state = self.iterations.get(it)
        return state is not None and state.owed == 0

    def result(self, it):
        state = self.iterations.pop(it)
        self.finished.add(it)
        return state.values, state.stop_down, state.last_started

    def settled(self, it, piece, seg):
        """True once a message of this segment is of no more use to send up:
        its new values are here, or the iteration is over."""
        if it in self.finished:
            return True
        state = self.iterations.get(it)
        return state is not None and (piece, seg) in state.down

    def obsolete(self, header):
        """True for a queued message no node needs any more: a partial sum
        of a segment whose new values are here, a backup copy of an
        iteration this node is done with."""
        kind, it = header.get("type"), header.get("it")
        if kind == "agg":
            return self.settled(it, header["piece"], header["seg"])
        return kind == "dist" and header.get("lane") == BACKUP and it in self.finished

    def priority_of(self, header):
        """0 for the primary lane; the backup lane after it, its later
        segments first, so it fills a piece from the end the primary
        reaches last."""
        if header.get("lane") != BACKUP:
            return 0
        return 2.0 - header["seg"] / self.per_piece[header["piece"]]

    # ------------------------------------------------------------ events

    def start(self, it, contribution=None, stop=False, started=0.0):
        state = self._it(it)
        out = []
        if not self.contributor:
            return out
        take_own(self.name, self.plan.size, state, it, contribution)
        for i, j, a, b in self.segs:
            for lane in self._lanes_of(i):
                out += self._add(it, state, lane, i, j, self.name, contribution[a:b], 1, stop, started)
        return out

    def on_message(self, sender, header, payload):
        kind, it = header["type"], header["it"]
        i, j, lane = header["piece"], header["seg"], header.get("lane", PRIMARY)
        if (i, j) not in self.bounds:
            raise AggregationError(f"{sender} sent piece {i} segment {j}, which the plan lacks")
        if it in self.finished:
            return []                   # a copy that lost the race, after this node was done
        state = self._it(it)
        if kind == "agg":
            if (i, j) in state.down:
                return []               # the root has folded this segment already
            out = []
            for one in (self._lanes_of(i) if lane == BOTH else (lane,)):
                if sender not in self.agg_from[(one, i)]:
                    raise AggregationError(f"{sender} is not a child of {self.name} for piece {i} "
                                           f"in lane {one}")
                if header["count"] != self.child_counts[(one, i)][sender]:
                    raise AggregationError(f"{sender}'s partial sum of piece {i} segment {j} holds "
                                           f"{header['count']} contributions, not the "
                                           f"{self.child_counts[(one, i)][sender]} of its subtree")
                out += self._add(it, state, one, i, j, sender, payload, header["count"], header["stop"],
                                 header["started"])
            return out
        if kind == "dist":
            if sender not in self.dist_from[i]:
                raise AggregationError(f"{sender} is not {self.name}'s parent for piece {i}")
            if (i, j) in state.down:
                return []
            return self._down(it, state, i, j, payload, header["stop"], header["started"])
        raise AggregationError(f"unknown data-plane message {kind!r} from {sender}")

    # ------------------------------------------------------------ internals

    def _lanes_of(self, i):
        """The lanes this node sums piece i in: one that serves both where
        they agree on its place."""
        return (PRIMARY,) if self.shared[i] else (PRIMARY, BACKUP)

    def _add(self, it, state, lane, i, j, source, values, count, stop, started):
        key = (lane, i, j)
        if key in state.sent_up:
            raise AggregationError(f"{self.name}: a contribution to piece {i} segment {j} of "
                                   f"iteration {it} arrived after lane {lane} had sent it up")
        if (lane, i) not in self.expected:
            raise AggregationError(f"{self.name} does not sum piece {i} in lane {lane}")
        complete = gather(state, self.sum_order[(lane, i)], key, source, values, count, stop, started,
                          self.expected[(lane, i)], self.contributor,
                          lambda: f"{self.name}: piece {i} segment {j} of iteration {it} in lane {lane}")
        if complete is None:
            return []
        total, count, stop, started = complete
        state.sent_up.add(key)
        piece = self.lanes[lane].pieces[i]
        if piece.root != self.name:
            sent = BOTH if self.shared[i] else lane
            return self._hold(state, [(piece.parent[self.name],
                                       {"type": "agg", "it": it, "piece": i, "seg": j, "lane": sent,
                                        "count": count, "stop": stop, "started": started},
                                       total)])
        state.folded_at_root(self.name, count, self.n, f"piece {i} segment {j} of iteration {it}")
        if (i, j) in state.down:
            return []                   # the other lane got here first
        self.counters["folded_backup" if lane == BACKUP else "folded_primary"] += 1
        a, b = self.bounds[(i, j)]
        return self._down(it, state, i, j, self.fold(a, b, total, count), stop, started)

    def _down(self, it, state, i, j, values, stop, started):
        for lane in (PRIMARY, BACKUP):        # what either lane still sums of it is of no use now
            key = (lane, i, j)
            for table in (state.acc, state.summed, state.early, state.count, state.stop, state.started):
                table.pop(key, None)
        values = state.take_down((i, j), self.needs_values[i], self.bounds[(i, j)], values, stop, started)
        out = self._hold(state, [(kid, {"type": "dist", "it": it, "piece": i, "seg": j, "lane": lane,
                                        "stop": bool(stop), "started": started}, values)
                                 for kid, lane in self.dist_to[i]])
        if state.held is not None and len(state.down) >= self.after * len(self.segs):
            held, state.held = state.held, None
            out += [m for m in held if not self.obsolete(m[1])]
        return out

    def _hold(self, state, messages):
        """The messages to send now: backup copies wait until this node
        holds `after` of the iteration's new values (the segments still
        missing then are the ones worth a second way)."""
        if state.held is None:
            return messages
        state.held += [m for m in messages if m[1]["lane"] == BACKUP]
        return [m for m in messages if m[1]["lane"] != BACKUP]
