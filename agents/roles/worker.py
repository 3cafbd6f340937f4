"""Worker: compute gradients, push them along the overlay, pull parameters."""

import os
import time

from agents import sharding
from agents.overlay import OVERLAYS
from agents.transport import Endpoint
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
    servers = [s.name for s in cfg.servers]
    owner = sharding.assign(params.sizes(), len(servers))
    overlay = OVERLAYS[cfg.overlay]
    pushes = [t for t in overlay.push_plan([cfg.name], servers, owner)]
    trainer = Trainer(cfg.workload, cfg.rank, len(cfg.workers), cfg.speed, params)
    ep = Endpoint(cfg.name, cfg.host, cfg.port, {s.name: (s.host, s.port) for s in cfg.servers},
                  cfg.transport.chunk_bytes, cfg.transport.heartbeat_interval,
                  cfg.transport.dead_after, cfg.transport.io_threads, log)
    log("start", role="worker", rank=cfg.rank, dc=cfg.dc, speed=cfg.speed,
        params=sum(params.sizes().values()) // 4)
    values = dict(params.initial)
    want_stop = False
    it = 0
    speed = SpeedFile(cfg.speed_file)
    try:
        while it < cfg.max_iterations:
            new_speed = speed.changed()
            if new_speed is not None:
                trainer.speed = new_speed
                log("speed", it=it, speed=new_speed)
            grads, loss, compute = trainer.gradients()
            t_push = time.monotonic()
            for t in pushes:
                ep.send(t.dst, {"type": "push", "it": it, "stop": want_stop},
                        params.pack(t.keys, grads))
            pulls = {}
            while len(pulls) < len(servers):
                m = ep.recv(watch=servers)
                if m.header["type"] == "pull" and m.header["it"] == it:
                    pulls[m.sender] = m
            t_done = time.monotonic()
            stop = False
            for s, m in pulls.items():
                values.update(params.unpack(m.header["keys"], m.payload))
                stop |= m.header.get("stop", False)
            trainer.set_parameters(values)
            push_time = max(m.header["arrived"] for m in pulls.values()) - t_push
            pull_time = t_done - max(m.header["sent"] for m in pulls.values())
            sync = t_done - t_push
            comm = min(sync, max(0.0, push_time) + max(0.0, pull_time))
            log("iter", it=it, compute=compute, comm=comm, wait=sync - comm, sync=sync, loss=loss,
                bytes_out=sum(ep.bytes_sent.values()), bytes_in=sum(ep.bytes_received.values()))
            it += 1
            if cfg.rank == 0 and (it % cfg.workload.eval_every == 0 or it == cfg.max_iterations or stop):
                result = trainer.evaluate()
                if result is not None:
                    log("eval", it=it, accuracy=result[0], loss=result[1])
                    if cfg.target_accuracy and result[0] >= cfg.target_accuracy:
                        want_stop = True
            if stop:
                break
        for s in servers:
            ep.send(s, {"type": "bye", "it": it})
        log("done", iterations=it)
    finally:
        ep.close()
