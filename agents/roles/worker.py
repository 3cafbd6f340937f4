"""Worker: compute a gradient, contribute it through the overlay's data
plane, take the new model, and again."""

import hashlib
import os
import time

from agents.dataplane.node import build_node, data_plane
from agents.workload import Trainer, parameters_for


class SpeedFile:
    """A compute speed the runner may rewrite while we run (dynamics, console)."""

    def __init__(self, path):
        self.path = path
        self.mtime = None

    def changed(self):
        if not self.path:
            return None
        try:
            mtime = os.stat(self.path).st_mtime_ns
            if mtime == self.mtime:
                return None
            self.mtime = mtime
            with open(self.path) as f:
                return float(f.read().strip())
        except (OSError, ValueError):
            return None


def run(cfg, log):
    params = parameters_for(cfg.workload)
    keys = list(params.shapes)
    trainer = Trainer(cfg.workload, cfg.rank, len(cfg.workers), cfg.speed, params)
    node = build_node(cfg, params.pack(keys, params.initial), log)
    plane = data_plane(cfg, node, log)
    log("start", role="worker", rank=cfg.rank, dc=cfg.dc, speed=cfg.speed,
        params=sum(params.sizes().values()) // 4)
    want_stop = False
    it = 0
    speed = SpeedFile(cfg.speed_file)
    finished = False
    try:
        while it < cfg.max_iterations:
            new_speed = speed.changed()
            if new_speed is not None:
                trainer.speed = new_speed
                log("speed", it=it, speed=new_speed)
            grads, loss, compute = trainer.gradients()
            t_sync = time.monotonic()
            values, stop, last_started, first_down = plane.iteration(
                it, params.pack(keys, grads), want_stop)
            t_done = time.monotonic()
            trainer.set_parameters(params.unpack(keys, values))
            sync = t_done - t_sync
            # Waiting: until the slowest worker began its synchronization.
            wait = min(sync, max(0.0, last_started - t_sync))
            log("iter", it=it, compute=compute, comm=sync - wait, wait=wait, sync=sync, loss=loss,
                down=(t_done - first_down) if first_down else None,
                bytes_out=sum(plane.ep.bytes_sent.values()),
                bytes_in=sum(plane.ep.bytes_received.values()))
            it += 1
            if cfg.rank == 0 and (it % cfg.workload.eval_every == 0 or it == cfg.max_iterations or stop):
                result = trainer.evaluate()
                if result is not None:
                    log("eval", it=it, accuracy=result[0], loss=result[1])
                    if cfg.target_accuracy and result[0] >= cfg.target_accuracy:
                        want_stop = True
            if stop:
                break
        # A digest of the final model: runs can be compared bit for bit.
        log("done", iterations=it,
            model=hashlib.sha256(values.tobytes()).hexdigest()[:16] if it else None)
        finished = True
    finally:
        # Only a normal end waits for its last data to leave.
        plane.close(drain=finished)
