"""Worker: runs its sync scheme's worker side (agents.sync) with what every
scheme needs: the trainer on this worker's shard, the model as one flat
vector, the data plane, evaluation, the live compute speed and the
records of each round."""

import hashlib
import os
import threading
import time

import numpy as np

from agents.roles.compose import build_node, data_plane, endpoint, layout_of, sync_scheme
from agents.workload import FlatModel, workload_of


class SpeedFile:
    """A compute speed the runner may rewrite while we run (dynamics, console).
    A file is known by its inode, time and size (a rename brings a new
    inode; two writes within one tick of the file system's clock keep the
    time), and taken as seen only once it parsed."""

    def __init__(self, path):
        self.path = path
        self.seen = None

    def changed(self):
        if not self.path:
            return None
        try:
            st = os.stat(self.path)
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            if key == self.seen:
                return None
            with open(self.path) as f:
                speed = float(f.read().strip())
        except (OSError, ValueError):
            return None
        self.seen = key
        return speed


class Evaluator:
    """Rank 0's evaluations on wall time: every `period` seconds a thread
    tests a copy of the latest global model the worker took (`offer`), on a
    model of its own, so every scheme is tested on the same clock and none
    is slowed by it beyond the CPU it takes.  Each `eval` event carries
    `at`, when that model was taken."""

    def __init__(self, ctx, period):
        self.ctx = ctx
        self.period = period
        self.latest = None
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def offer(self, rounds, values):
        with self.lock:
            self.latest = (rounds, values, time.monotonic())

    def _run(self):
        tested = None
        while not self.stopping.wait(self.period):
            with self.lock:
                latest = self.latest
            if latest is None or latest is tested:
                continue
            tested = latest
            rounds, values, at = latest
            result = self.ctx.trainer.evaluate_values(values)
            if result is not None:
                self.ctx.took(rounds, {**result, "at": at})

    def close(self):
        self.stopping.set()
        self.thread.join(timeout=30)


class WorkerContext:
    def __init__(self, cfg, log):
        self.cfg = cfg
        self.log = log
        self.scheme = sync_scheme(cfg)
        self.options = self.scheme.options
        workload = workload_of(cfg.workload)
        self.params = workload.parameters()
        self.keys = list(self.params.shapes)
        self.model = FlatModel.of(self.params, cfg.workload)
        self.initial = self.model.values
        self.trainer = workload.trainer(cfg.rank, len(cfg.workers), cfg.speed, self.params)
        self.speed = SpeedFile(cfg.speed_file)
        self.max_rounds = cfg.max_iterations
        self.want_stop = False        # the target accuracy is reached: ask everyone to stop
        self.plane = None
        self.ep = None
        self.rounds = 0
        self.steps = 0
        self.held = self.initial
        period = cfg.workload.eval_period
        self.evaluator = Evaluator(self, period) if cfg.rank == 0 and period > 0 \
            and self.trainer.REAL else None

    # ------------------------------------------------------------ computing

    def gradient(self):
        """(flat gradient at the current model, loss, seconds computing),
        at the compute speed the runner set last."""
        new_speed = self.speed.changed()
        if new_speed is not None:
            self.trainer.speed = new_speed
            self.log("speed", it=self.rounds, speed=new_speed)
        grads, loss, compute = self.trainer.gradients()
        self.steps += 1
        return self.params.pack(self.keys, grads), loss, compute

    def set_model(self, flat):
        self.held = flat
        self.trainer.set_parameters(self.params.unpack(self.keys, flat))

    def data_share(self):
        """This worker's share of all training samples (FedAvg's weight);
        equal shares for a synthetic workload."""
        return self.trainer.data_share()

    # ------------------------------------------------------------ talking

    def data_plane(self, side=None):
        """The overlay's data plane (an all-reduce of one vector per round)."""
        node = build_node(self.cfg, self.scheme, self.model, self.log)
        self.plane = data_plane(self.cfg, node, self.log, side=side)
        self.ep = self.plane.ep
        return self.plane

    def endpoint(self):
        """A bare Endpoint, for a scheme that talks to the roots directly."""
        self.ep = endpoint(self.cfg, self.log)
        return self.ep

    def layout(self):
        """Who runs where and the WAN, for a scheme that plans its own talk."""
        return layout_of(self.cfg, self.model)

    def close(self, drain):
        if self.ep is not None:
            self.ep.close(drain)

    # ------------------------------------------------------------ records

    def started(self):
        self.log("start", role="worker", rank=self.cfg.rank, dc=self.cfg.dc, speed=self.cfg.speed,
                 sync=self.cfg.sync, params=int(self.initial.size))

    def record(self, it, compute, sync, wait, loss, **extra):
        """One round: seconds computing, seconds from handing over the
        update to holding the new model, seconds of that blocked waiting
        for the slowest contributor, and what the scheme adds."""
        ep = self.ep
        self.log("iter", it=it, compute=compute, comm=sync - wait, wait=wait, sync=sync, loss=loss,
                 bytes_out=sum(ep.bytes_sent.values()), bytes_in=sum(ep.bytes_received.values()),
                 **extra)
        self.rounds = it + 1

    def synchronize(self, it, contribution, compute, loss, load, **extra):
        """One blocking round over the data plane: contribute, wait for the
        new model and `load` it, record the round (the time until the
        slowest contributor began its own counts as waiting) and evaluate.
        Returns (the new model, whether training stops)."""
        t_sync = time.monotonic()
        model, stop, last_started, first_down = self.plane.iteration(it, contribution,
                                                                     self.want_stop)
        t_done = time.monotonic()
        load(model)
        sync = t_done - t_sync
        self.record(it, compute, sync, min(sync, max(0.0, last_started - t_sync)), loss,
                    down=(t_done - first_down) if first_down else None, **extra)
        self.evaluate(it + 1, stop, final=it + 1 == self.max_rounds)
        return model, stop

    def evaluate(self, rounds, stop, final=False):
        """Rank 0 tests the global model it holds (a scheme calls this right
        after adopting one) every eval_every rounds, at the last one and
        when training stops; with an eval_period, the Evaluator tests a copy
        of the latest such model on wall time instead, and only the last one
        is tested here.  Reaching the target accuracy sets want_stop."""
        cfg = self.cfg
        if cfg.rank != 0:
            return
        if self.evaluator is not None:
            self.evaluator.offer(rounds, self.params.unpack(self.keys, self.current_model()))
            if not (final or stop):
                return
        elif not (rounds % cfg.workload.eval_every == 0 or final or stop):
            return
        result = self.trainer.evaluate()
        if result is not None:
            self.took(rounds, result)

    def took(self, rounds, result):
        """Log an evaluation; reaching the target accuracy sets want_stop."""
        self.log("eval", it=rounds, **result)
        if self.cfg.target_accuracy and result["accuracy"] >= self.cfg.target_accuracy:
            self.want_stop = True

    def current_model(self):
        """A copy of the flat model the trainer holds now."""
        return np.array(self.held, dtype=np.float32)

    def finish(self, rounds, model, **extra):
        # A digest of the final model: runs can be compared bit for bit.
        self.log("done", iterations=rounds, steps=self.steps,
                 model=hashlib.sha256(model.tobytes()).hexdigest()[:16] if rounds else None,
                 **extra)
        if rounds and self.cfg.rank == 0 and self.trainer.REAL:
            # The trained model itself, once: its tensors by name (parameters and buffers).
            np.savez(self.cfg.events[:-len(".jsonl")] + ".model.npz",
                     **{k: v.reshape(self.params.shapes[k])
                        for k, v in self.params.unpack(self.keys, model).items()})


def run(cfg, log):
    ctx = WorkerContext(cfg, log)
    finished = False
    try:
        ctx.scheme.work(ctx)
        finished = True
    finally:
        if ctx.evaluator is not None:
            ctx.evaluator.close()
        # Only a normal end waits for its last data to leave.
        ctx.close(drain=finished)
