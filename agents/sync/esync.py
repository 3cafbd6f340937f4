"""ESync (Li, Zhou, Yu et al., "ESync: An Efficient Synchronous Parallel
Algorithm for Distributed ML in Heterogeneous Clusters"; the authors'
code Lizonghang/ESync, trainer/esync_trainer.py and the State Server in
SimpleStateServer/server/views.py).

A state server (here the experiment's coordinator) decides how many local
steps each worker runs so that all arrive together.  Every round all
workers start from the global model w_t.  After every local step a
worker reports (k steps so far, c its step's duration, te the step's
end) and asks whether it is ready.  The state server answers:
  not ready while k = 0;
  s = the slowest worker (largest c); not ready if s has not started
  this round yet;  rest = c_s - (now - te_s), the time s needs to end its
  current step;  ready if the worker is s, or s is already ready, or
  c_r + epsilon > rest (another step would not end before s's does).
When all are ready the average of the deltas w_r - w_t is added to w_t
(global_lr 1) over the data plane, and a new round starts: each worker
resets its record (round, te = now) and the state server, on the first
reset of a new round, sets every k to 0 and every ready flag to false.

Where the text is silent: before every worker has reported one step the
slowest is unknown, so the answer is not ready (the authors' server keeps
c from earlier rounds, which round 0 lacks).  Times are the machine's
monotonic clock, which every namespace shares.

Non-blocking mode (paper section 4.2): a worker whose state server is
across a WAN link keeps computing while its query is in flight and stops
at the first step boundary after a "ready" answer arrived; the steps it
did meanwhile are in its delta.  `nonblocking`: auto (when the
coordinator is in another DC), on, off.
"""

import time

from agents.coordination import CoordinatorService
from agents.plugins import Option
from agents.sync.base import SyncScheme
from agents.sync.local_sgd import LocalSGD
from agents.sync.rules import AverageDelta


class _Record:
    __slots__ = ("k", "c", "te", "round", "ready")

    def __init__(self):
        self.k, self.c, self.te, self.round, self.ready = 0, None, 0.0, -1, False


class StateServer:
    """QUERY-STATE and RESET of the authors' state server, for workers by name."""

    def __init__(self, workers, epsilon):
        self.records = {w: _Record() for w in workers}
        self.epsilon = epsilon
        self.round = 0

    def query(self, r, k, c, te, now):
        rec = self.records[r]
        rec.k, rec.c, rec.te = k, c, te
        if k == 0:
            return False
        if any(x.c is None for x in self.records.values()):
            return False
        s = max(self.records, key=lambda w: self.records[w].c)
        slow = self.records[s]
        if slow.round != self.round:
            return False
        rest = slow.c - (now - slow.te)
        if r == s or slow.ready or rec.c + self.epsilon > rest:
            rec.ready = True
            return True
        return False

    def reset(self, r, round_, te):
        if round_ != self.round:
            self.round = round_
            for x in self.records.values():
                x.k, x.ready = 0, False
        self.records[r].round = round_
        self.records[r].te = te


class StateService(CoordinatorService):
    """The state server behind the coordinator's message loop."""

    TYPES = ("esync_query", "esync_reset")

    def __init__(self, workers, options, clock=time.monotonic):
        self.state = StateServer(workers, options["epsilon"])
        self.clock = clock

    def on_message(self, sender, header):
        if header["type"] == "esync_reset":
            self.state.reset(sender, header["round"], header["te"])
            return [], []
        was_ready = self.state.records[sender].ready
        # A query still in flight when its sender moved on to the next round
        # (non-blocking mode) is answered, but must not touch the new round.
        stale = header["round"] != self.state.round
        ready = not stale and self.state.query(sender, header["k"], header["c"], header["te"],
                                               self.clock())
        reply = {"type": "esync_answer", "round": header["round"], "seq": header["seq"],
                 "ready": ready}
        # One decision per worker and round: when it first becomes ready.
        decisions = [{"decision": "ready", "worker": sender, "round": header["round"],
                      "k": header["k"]}] if ready and not was_ready else []
        return [(sender, reply)], decisions


class _Answers:
    """The state server's answers that came in, for the current round."""

    def __init__(self):
        self.round = 0
        self.ready = False
        self.seen = set()

    def take(self, m):
        h = m.header
        if h["round"] == self.round:
            self.seen.add(h["seq"])
            self.ready |= h["ready"]


class ESync(SyncScheme):
    NAME = "esync"
    DESCRIPTION = "ESync: a state server sets each worker's local steps so that all arrive together"
    OPTIONS = (
        Option("epsilon", 0.5, "seconds of slack: another step is allowed if it ends this close "
               "to the slowest worker's", low=0.0, high=3600.0),
        Option("global_lr", 1.0, "the roots add this times the mean delta", low=0.0, high=100.0),
        Option("nonblocking", "auto", "keep computing while a query is in flight (auto: when the "
               "coordinator is in another DC)", choices=("auto", "on", "off")),
    )
    NEEDS = frozenset({"trees", "coordinator"})

    def rule(self, model):
        return AverageDelta(model.values, self.options["global_lr"])

    def service(self, workers):
        return StateService(workers, self.options)

    def work(self, ctx):
        cfg, o = ctx.cfg, self.options
        coordinator = cfg.coordinator.name
        nonblocking = o["nonblocking"] == "on" or (o["nonblocking"] == "auto"
                                                   and cfg.coordinator.dc != cfg.dc)
        answers = _Answers()
        plane = ctx.data_plane(side={"esync_answer": answers.take})
        local = LocalSGD(ctx, ctx.initial)
        ctx.started()
        model = ctx.initial
        it = 0
        while it < ctx.max_rounds:
            answers.round, answers.ready, answers.seen = it, False, set()
            plane.ep.send(coordinator, {"type": "esync_reset", "round": it, "te": time.monotonic()})
            compute, loss, k = 0.0, None, 0
            while not answers.ready:
                loss, c, te = local.step()
                compute += c
                k += 1
                plane.ep.send(coordinator, {"type": "esync_query", "round": it, "seq": k, "k": k,
                                            "c": c, "te": te})
                if nonblocking:
                    plane.poll(0)
                else:
                    while k not in answers.seen:
                        plane.poll(0.2, watch=(coordinator,))
            model, stop = ctx.synchronize(it, local.w - model, compute, loss, local.load,
                                          steps=k, busy=0.0, overlap=0.0)
            it += 1
            if stop:
                break
        ctx.finish(it, model)
