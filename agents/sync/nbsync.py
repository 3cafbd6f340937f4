"""NBSync (Zhou, Li, Yu, Luo, Sun, "NBSync: Parallelism of Local Computing
and Global Synchronization for Fast Distributed Machine Learning in WANs",
IEEE TSC 2023), as the authors' MXNet patches (zhouhuaman/NBSync,
src/kvstore/kvstore_dist.h and kvstore_dist_server.h) behave.

Workers never block.  Each keeps w (its local model) and b (the global
model it last adopted) and runs local SGD without pause.  The first step
sends delta = w - b at once, and b = w, so that step is not sent again
(leaving b at w0 there would send the first step
twice).  From then on, at the first step boundary after a new global
model G has fully arrived:
    delta = w - b;  w = G;  b = G;  send delta (asynchronously)
and computing goes on.  The root waits for all N deltas of a round and
sets G = G + mean(deltas) (rules.AverageDelta, global_lr 1 as in the
authors' server), then G goes to every worker.  So each worker runs as
many local steps in a round as fit in its synchronization time: more for
fast workers and slow links, fewer for slow workers, changing with the
network.  Every local step is counted exactly once: it is in the delta
of the round in which the worker adopted the next model.

The data plane runs in a thread of its own, which alone touches the
sockets; the training loop hands it deltas and takes global models
through two queues.  Per worker and round the `iter` event records the
local steps, the synchronization time (handing over the delta to holding
the new model), the compute time during it and their ratio, `overlap`.
"""

import queue
import threading
import time

from agents.plugins import Option
from agents.sync.base import SyncScheme
from agents.sync.local_sgd import LocalSGD
from agents.sync.rules import AverageDelta


class Bookkeeping:
    """The worker's w/b arithmetic, apart from how models travel: `adopt`
    is what happens at a step boundary once a new global model is in."""

    def __init__(self, local):
        self.local = local
        self.base = local.w.copy()

    def first(self):
        """The bootstrap delta, sent after the first step; the base moves
        to the model it was taken from, so that step is not sent again."""
        delta = self.local.w - self.base
        self.base = self.local.w.copy()
        return delta

    def adopt(self, global_model):
        """Returns the delta to send: all local progress since the last
        adoption, which the new model does not hold yet."""
        delta = self.local.w - self.base
        self.local.load(global_model)
        self.base = global_model.copy()
        return delta


class _Sync:
    """The data plane's thread: one round per delta handed to it."""

    def __init__(self, plane):
        self.plane = plane
        self.deltas = queue.Queue()
        self.models = queue.Queue()
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while True:
                item = self.deltas.get()
                if item is None:
                    return
                it, delta, stop = item
                model, stop, _, _ = self.plane.iteration(it, delta, stop)
                self.models.put((it, model, stop, time.monotonic()))
        except BaseException as e:          # handed to the training loop, which raises it
            self.error = e
            self.models.put(None)

    def send(self, it, delta, stop):
        self.deltas.put((it, delta, stop))

    def arrived(self):
        """(round, model, stop, arrival time) if a new model is in."""
        try:
            item = self.models.get_nowait()
        except queue.Empty:
            return None
        if item is None:
            raise self.error
        return item

    def close(self, wait=True):
        """Ends the thread after its round; on a failure nothing waits for it."""
        self.deltas.put(None)
        if wait:
            self.thread.join()


def busy_during(steps, start, end):
    """Seconds of the (start, end) step intervals that fall in [start, end]."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in steps)


class NBSync(SyncScheme):
    NAME = "nbsync"
    DESCRIPTION = "NBSync: local computing never waits; deltas synchronize in the background"
    OPTIONS = (Option("global_lr", 1.0, "the roots add this times the mean delta",
                      low=0.0, high=100.0),)

    def rule(self, model):
        return AverageDelta(model.values, self.options["global_lr"])

    def work(self, ctx):
        plane = ctx.data_plane()
        local = LocalSGD(ctx, ctx.initial)
        book = Bookkeeping(local)
        ctx.started()
        sync = _Sync(plane)
        model = ctx.initial
        rounds = 0
        normal = False
        try:
            # One step, then round 0's delta leaves and computing goes on.
            loss, c, end = local.step()
            sent_at, intervals = time.monotonic(), [(end - c, end)]
            sync.send(0, book.first(), ctx.want_stop)
            while True:
                arrived = sync.arrived()
                if arrived is None:
                    loss, c, end = local.step()
                    intervals.append((end - c, end))
                    continue
                it, model, stop, at = arrived
                delta = book.adopt(model)
                seconds = at - sent_at
                busy = busy_during(intervals, sent_at, at)
                ctx.record(it, sum(b - a for a, b in intervals), seconds, 0.0, loss,
                           steps=len(intervals), busy=busy, overlap=busy / seconds if seconds > 0 else 0.0)
                rounds = it + 1
                ctx.evaluate(rounds, stop, final=rounds == ctx.max_rounds)
                if stop or rounds == ctx.max_rounds:
                    break
                sent_at, intervals = time.monotonic(), []
                sync.send(rounds, delta, ctx.want_stop)
            normal = True
        finally:
            sync.close(wait=normal)
        ctx.finish(rounds, model)
