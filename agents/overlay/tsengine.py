"""TSEngine: an adaptive overlay that schedules every model transfer at a
coordinator from throughputs it measured (Zhou et al., "Communication-
efficient Decentralized Machine Learning over Heterogeneous Networks",
ICDE 2021; the rules below follow the authors' public code,
zhouhuaman/TSEngine, ps-lite `van.cc` and `kv_app.h`, with its bugs fixed).

Coordinator state: `A[s][r]`, the measured throughput from s to r in
bytes/s, with the round (iteration) it was measured in; entries older than
`forget_rounds` rounds are dropped.

Distribution ("auto-pull"): after the root has the new values of a piece,
the root and then every worker that received them ask the coordinator
"whom next?", send the piece, time it until the receiver's ack, and report
the throughput with the next ask.  The coordinator answers with a worker
not yet assigned this round: with probability p = min(K/(K+U), max_greed)
(K known and U unknown candidates, in floating point: the original divided
integers) the best known one, otherwise a random unexplored one (a random
candidate once all are known, as GeoMX does; the original crashed there);
"round over" once every worker is assigned.

Aggregation: a node holding an unsent partial sum enters a FIFO queue at
the coordinator, which starts with the piece's root.  Whenever two entries
are queued the first two are paired: if one is the root the other sends to
it; otherwise the one with the faster measured direction sends to the
other (ties and unknowns: the later-queued sends to the earlier-queued).
The receiver adds the partial sum and re-enters the queue; the sender is
done for the round.  The root folds the sum in once it holds all N.

The unit of scheduling is a piece of the model, and the server DC's
servers take the pieces in turn as their roots.  With `piece_by: tensor`
a piece is one tensor, as the original's unit is one MXNet key (one
parameter tensor): small tensors stay pieces of their own, and a tensor of
more than `bigarray_bound` elements is cut into even pieces of at most that
many (the bound is MXNet's MXNET_KVSTORE_BIGARRAY_BOUND, 1,000,000 elements,
`src/kvstore/kvstore_dist.h`).  With `piece_by: even` (the default) the
model is cut into `pieces` even pieces instead (default 1: the whole
model); `pieces` is for that alone.

Departures from the original, each a choice the text leaves open: MXNet
cuts a big tensor into one part per server (with the original's single
server, not at all), while here its pieces are at most `bigarray_bound`
elements whatever the servers, so that no unit is unbounded; `piece_by:
even` cuts the flat model with no regard to tensors; transfers are timed
with the monotonic wall clock in bytes per second (the original used CPU
time and transfers per second); a round is one iteration of one piece, so
rounds of different pieces never mix.

Messages, agent -> coordinator:
  ts_ready  it, piece                      "I hold an unsent partial sum"
  ts_ask    it, piece, last, bps           "whom next?" (+ the last transfer's throughput)
coordinator -> agent:
  ts_push   it, piece, to                  send your partial sum to `to`
  ts_next   it, piece, to                  send the new values to `to` (None: round over)
agent -> agent: agg / dist segments as in the tree executor, and
  ts_ack    it, piece                      the whole piece arrived (times the transfer)
"""

import random
import time

import numpy as np

from agents.coordination import CoordinatorService
from agents.dataplane.node import ExecutorNode
from agents.dataplane.plan import even_cuts
from agents.dataplane.tree import AggregationError, segments
from agents.overlay.base import DynamicOverlay
from agents.plugins import Option, OptionError


class TSEngine(DynamicOverlay):
    NAME = "tsengine"
    DESCRIPTION = "TSEngine: a coordinator schedules each transfer from measured throughput"
    OPTIONS = (
        Option("piece_by", "even", "a piece is an even cut of the model (`pieces` of them) "
               "or one tensor", choices=("even", "tensor")),
        Option("pieces", 1, "piece_by: even cuts the model into this many pieces, scheduled apart",
               low=1, high=64),
        Option("bigarray_bound", 1_000_000, "piece_by: tensor cuts a tensor of more elements "
               "into even pieces of at most this many", low=1, high=2_000_000_000),
        Option("max_greed", 0.9, "the most often the best known receiver is chosen",
               low=0.0, high=1.0),
        Option("forget_rounds", 5, "throughputs older than this many rounds are dropped",
               low=1, high=10**6),
    )

    def __init__(self, options=None):
        super().__init__(options)
        if self.options["piece_by"] == "tensor" and self.options["pieces"] != 1:
            raise OptionError("pieces", "cuts the model evenly, which piece_by: tensor does not: "
                                        "leave pieces out or set piece_by: even")

    def takes_part(self, name, layout):
        return name in layout.worker_names or name in layout.roots()

    def node(self, name, layout, segment, fold, coordinator):
        return Node(name, layout, segment, fold, coordinator, pieces=pieces_of(layout, self.options))

    def policy(self, layout, seed=0):
        return Policy(layout, seed, self.options)


def root_of(layout, piece):
    """The server DC's servers take the pieces in turn."""
    roots = layout.roots()
    return roots[piece % len(roots)]


def pieces_of(layout, options):
    """[(start, stop, root)]: the model's pieces in flat order, as the
    overlay's `options` cut it."""
    if options["piece_by"] == "tensor":
        tensors = layout.tensors or [layout.size]     # unknown: the model is one tensor
        if sum(tensors) != layout.size:
            raise ValueError(f"tensors of {sum(tensors)} elements in a model of {layout.size}")
        cuts = tensor_cuts(tensors, options["bigarray_bound"])
    else:
        cuts = even_cuts(layout.size, options["pieces"])
    return [(a, b, root_of(layout, i)) for i, (a, b) in enumerate(cuts)]


def tensor_cuts(tensors, bound):
    """[(start, stop)]: a cut per tensor of the flat model (`tensors`, their
    elements in flat order), one of more than `bound` elements in the
    fewest even cuts of at most `bound`; empty tensors have none."""
    cuts, start = [], 0
    for n in tensors:
        cuts += [(start + a, start + b) for a, b in even_cuts(n, -(-n // bound))] if n else []
        start += n
    return cuts


# ------------------------------------------------------------ coordinator


class Throughputs:
    """A[s][r] in bytes/s with the round each was measured in."""

    def __init__(self, forget_rounds):
        self.forget_rounds = forget_rounds
        self.a = {}                # (s, r) -> (bytes/s, round)

    def record(self, s, r, bps, round_):
        self.a[(s, r)] = (float(bps), round_)

    def forget(self, round_):
        """Drop what is older than `forget_rounds` rounds at `round_`."""
        self.a = {k: v for k, v in self.a.items() if round_ - v[1] <= self.forget_rounds}

    def get(self, s, r):
        v = self.a.get((s, r))
        return v[0] if v else None


def choose_receiver(s, candidates, a, max_greed, rng):
    """(receiver, how): the best known candidate with probability
    min(K/(K+U), max_greed), else a random unexplored one."""
    known = sorted(c for c in candidates if a.get(s, c) is not None)
    unknown = sorted(c for c in candidates if a.get(s, c) is None)
    p = min(len(known) / (len(known) + len(unknown)), max_greed)
    if known and rng.random() < p:
        return max(known, key=lambda c: a.get(s, c)), "greedy"   # ties: the first by name
    return rng.choice(unknown or sorted(candidates)), "explore"


class Policy(CoordinatorService):
    """The coordinator's side: answers ts_ready and ts_ask, returns the
    replies to send and the decisions to record."""

    def __init__(self, layout, seed, options):
        self.workers = list(layout.worker_names)
        self.layout = layout
        self.max_greed = float(options["max_greed"])
        self.a = Throughputs(int(options["forget_rounds"]))
        self.rng = random.Random(seed)
        self.assigned = {}         # (it, piece) -> workers given the new values
        self.queues = {}           # (it, piece) -> nodes holding an unsent partial sum
        self.sent = {}             # (it, piece) -> partial sums sent so far
        self.latest = -1

    def on_message(self, sender, header):
        """-> ([(agent, reply header)], [decision dict])."""
        kind, key = header["type"], (header["it"], header["piece"])
        self._advance(header["it"])
        if kind == "ts_ready":
            return self._ready(sender, key)
        if kind == "ts_ask":
            return self._ask(sender, key, header.get("last"), header.get("bps"))
        raise ValueError(f"unknown coordinator request {kind!r} from {sender}")

    def _advance(self, it):
        if it > self.latest:
            self.latest = it
            self.a.forget(it)
            for table in (self.assigned, self.queues, self.sent):
                for key in [k for k in table if k[0] < it - 2]:
                    del table[key]

    def _ready(self, node, key):
        queue = self.queues.setdefault(key, [])
        if node in queue:
            raise ValueError(f"{node} is already queued for round {key}")
        queue.append(node)
        if len(queue) < 2:
            return [], []
        first, second = queue.pop(0), queue.pop(0)
        root = root_of(self.layout, key[1])
        if root in (first, second):
            snd, rcv = (second, root) if first == root else (first, root)
        elif (self.a.get(first, second) or 0) > (self.a.get(second, first) or 0):
            snd, rcv = first, second
        else:
            snd, rcv = second, first
        self.sent[key] = self.sent.get(key, 0) + 1
        if self.sent[key] > len(self.workers):
            raise ValueError(f"round {key}: more partial sums sent than there are workers")
        decision = {"decision": "pair", "it": key[0], "piece": key[1], "sender": snd, "receiver": rcv}
        return [(snd, {"type": "ts_push", "it": key[0], "piece": key[1], "to": rcv})], [decision]

    def _ask(self, s, key, last, bps):
        if last is not None and bps is not None:
            self.a.record(s, last, bps, key[0])
        assigned = self.assigned.setdefault(key, set())
        candidates = [w for w in self.workers if w not in assigned and w != s]
        if not candidates:
            return [(s, {"type": "ts_next", "it": key[0], "piece": key[1], "to": None})], []
        r, how = choose_receiver(s, candidates, self.a, self.max_greed, self.rng)
        assigned.add(r)
        decision = {"decision": "distribute", "it": key[0], "piece": key[1], "sender": s,
                    "receiver": r, "how": how, "bps": self.a.get(s, r)}
        return [(s, {"type": "ts_next", "it": key[0], "piece": key[1], "to": r})], [decision]


# ------------------------------------------------------------ agent


class _Piece:
    def __init__(self):
        self.acc = None            # float32 partial sum over the piece
        self.count = None          # per segment: contributions in acc
        self.stop = False
        self.started = 0.0
        self.receiving = {}        # sender -> segments of its partial sum still to come
        self.heard = set()         # (sender, seg) of partial sums
        self.sent = False          # the partial sum went up (or, at the root, was folded)
        self.folded = set()        # root: segments folded
        self.values = None         # the new values, once whole
        self.got = set()           # segments of new values held
        self.asking = False        # a distribution ask or transfer is in flight
        self.over = False          # the coordinator said the distribution round is over
        self.sending_to = None     # (receiver, bytes, time sent)


class Node(ExecutorNode):
    """One agent's side of TSEngine, with the tree executor's interface."""

    def __init__(self, name, layout, segment, fold, coordinator, pieces, clock=time.monotonic):
        self.name = name
        self.coordinator = coordinator
        self.fold = fold
        self.clock = clock
        self.size = layout.size
        self.contributor = name in layout.worker_names
        self.n = len(layout.worker_names)
        self.pieces = pieces          # [(start, stop, root)] in flat order (pieces_of)
        self.segs = [segments(a, b, segment) for a, b, _ in self.pieces]
        self.iterations = {}

    def roots(self):
        return [i for i, (_, _, root) in enumerate(self.pieces) if root == self.name]

    def piece_ranges(self):
        return [(a, b) for a, b, _ in self.pieces]

    def upstream(self):
        return [self.coordinator]

    def _state(self, it):
        if it not in self.iterations:
            self.iterations[it] = {"pieces": [_Piece() for _ in self.pieces], "values": None,
                                   "stop": False, "started": 0.0}
        return self.iterations[it]

    def done(self, it):
        state = self.iterations.get(it)
        if state is None:
            return False
        for i, p in enumerate(state["pieces"]):
            root = self.pieces[i][2] == self.name
            if (self.contributor or root) and not p.sent:
                return False
            if self.contributor and len(p.got) < len(self.segs[i]):
                return False
            if (self.contributor or root) and not p.over:
                return False
        return True

    def result(self, it):
        state = self.iterations.pop(it)
        return state["values"], state["stop"], state["started"]

    def start(self, it, contribution=None, stop=False, started=0.0):
        state = self._state(it)
        out = []
        if self.contributor:
            if contribution is None or contribution.size != self.size:
                raise ValueError(f"{self.name} must contribute a vector of {self.size} values")
            state["values"] = np.empty(self.size, np.float32)
        for i, (a, b, root) in enumerate(self.pieces):
            p = state["pieces"][i]
            if self.contributor:
                p.acc = np.array(contribution[a:b], dtype=np.float32)
                p.count = [1] * len(self.segs[i])
                p.stop, p.started = bool(stop), started
                out.append(self._to_coordinator("ts_ready", it, i))
            elif root == self.name:
                p.acc = np.zeros(b - a, np.float32)
                p.count = [0] * len(self.segs[i])
                out.append(self._to_coordinator("ts_ready", it, i))
        return out

    def on_message(self, sender, header, payload):
        kind, it, i = header["type"], header["it"], header["piece"]
        state = self._state(it)
        p = state["pieces"][i]
        if kind == "ts_push":
            return self._push(it, i, p, header["to"])
        if kind == "agg":
            return self._agg(it, i, p, sender, header, payload)
        if kind == "dist":
            return self._dist(it, i, state, p, sender, header, payload)
        if kind == "ts_ack":
            receiver, nbytes, sent = p.sending_to
            bps = nbytes / max(self.clock() - sent, 1e-9)
            p.sending_to = None
            return [self._to_coordinator("ts_ask", it, i, last=receiver, bps=bps)]
        if kind == "ts_next":
            return self._next(it, i, p, header["to"])
        raise AggregationError(f"unknown TSEngine message {kind!r} from {sender}")

    # ------------------------------------------------------------ internals

    def _to_coordinator(self, kind, it, i, **extra):
        return (self.coordinator, {"type": kind, "it": it, "piece": i, **extra}, None)

    def _segments(self, i, values, kind, it, extra):
        a = self.pieces[i][0]
        out = []
        for j, (s, e) in enumerate(self.segs[i]):
            out.append(({"type": kind, "it": it, "piece": i, "seg": j, **extra(j)},
                        np.ascontiguousarray(values[s - a:e - a])))
        return out

    def _push(self, it, i, p, to):
        if p.sent or p.receiving:
            raise AggregationError(f"{self.name} was told to send piece {i} of iteration {it} "
                                   "while it has no complete partial sum")
        p.sent = True
        acc, p.acc = p.acc, None
        return [(to, h, v) for h, v in self._segments(
            i, acc, "agg", it, lambda j: {"count": p.count[j], "stop": p.stop,
                                          "started": p.started})]

    def _agg(self, it, i, p, sender, header, payload):
        j = header["seg"]
        if (sender, j) in p.heard:
            raise AggregationError(f"{sender} sent piece {i} segment {j} of iteration {it} to "
                                   f"{self.name} twice")
        if p.acc is None or p.sent:
            raise AggregationError(f"{self.name} got a partial sum of piece {i} while not "
                                   "holding one")
        p.heard.add((sender, j))
        s, e = self.segs[i][j]
        a = self.pieces[i][0]
        p.acc[s - a:e - a] += payload
        p.count[j] += header["count"]
        p.stop = p.stop or bool(header["stop"])
        p.started = max(p.started, header["started"])
        if p.count[j] > self.n:
            raise AggregationError(f"{self.name}: piece {i} segment {j} of iteration {it} holds "
                                   f"{p.count[j]} contributions, more than {self.n}")
        left = p.receiving.get(sender, len(self.segs[i])) - 1
        p.receiving[sender] = left
        out = []
        root = self.pieces[i][2] == self.name
        if root and p.count[j] == self.n:
            out += self._fold(it, i, j, p)
            state = self.iterations[it]
            state["stop"] = state["stop"] or p.stop
            state["started"] = max(state["started"], p.started)
        if left == 0:
            del p.receiving[sender]
            if not (root and p.sent):
                out.append(self._to_coordinator("ts_ready", it, i))
        return out

    def _fold(self, it, i, j, p):
        s, e = self.segs[i][j]
        a = self.pieces[i][0]
        p.folded.add(j)
        new = self.fold(s, e, p.acc[s - a:e - a], self.n)
        if p.values is None:
            p.values = np.empty(len(p.acc), np.float32)
        p.values[s - a:e - a] = new
        p.got.add(j)
        if len(p.folded) < len(self.segs[i]):
            return []
        p.sent = True
        return [self._to_coordinator("ts_ask", it, i, last=None, bps=None)]

    def _dist(self, it, i, state, p, sender, header, payload):
        j = header["seg"]
        if j in p.got:
            raise AggregationError(f"new values of piece {i} segment {j} of iteration {it} "
                                   f"reached {self.name} twice")
        if p.values is None:
            p.values = np.empty(self.pieces[i][1] - self.pieces[i][0], np.float32)
        s, e = self.segs[i][j]
        a = self.pieces[i][0]
        p.values[s - a:e - a] = payload
        p.got.add(j)
        state["stop"] = state["stop"] or bool(header["stop"])
        state["started"] = max(state["started"], header["started"])
        if len(p.got) < len(self.segs[i]):
            return []
        if state["values"] is not None:
            state["values"][self.pieces[i][0]:self.pieces[i][1]] = p.values
        return [(sender, {"type": "ts_ack", "it": it, "piece": i}, None),
                self._to_coordinator("ts_ask", it, i, last=None, bps=None)]

    def _next(self, it, i, p, to):
        if to is None:
            p.over = True
            return []
        state = self.iterations[it]
        p.sending_to = (to, p.values.nbytes, self.clock())
        return [(to, h, v) for h, v in self._segments(
            i, p.values, "dist", it, lambda j: {"stop": state["stop"], "started": state["started"]})]
