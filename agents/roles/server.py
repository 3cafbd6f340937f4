"""Server: hold a shard of the parameters, apply the sync rule, answer pulls."""

import time

from agents import sharding
from agents.overlay import OVERLAYS
from agents.sync import SCHEMES
from agents.transport import Endpoint
from agents.workload import Parameters, parameters_for


def run(cfg, log):
    params = parameters_for(cfg.workload)
    servers = [s.name for s in cfg.servers]
    workers = [w.name for w in cfg.workers]
    owner = sharding.assign(params.sizes(), len(servers))
    mine = sharding.keys_of(owner, cfg.rank)
    pulls = [t for t in OVERLAYS[cfg.overlay].pull_plan(workers, servers, owner) if t.src == cfg.name]
    rule = SCHEMES[cfg.sync].Rule({k: params.initial[k] for k in mine}, workers,
                                  cfg.workload.lr, cfg.workload.momentum)
    ep = Endpoint(cfg.name, cfg.host, cfg.port, {w.name: (w.host, w.port) for w in cfg.workers},
                  cfg.transport.chunk_bytes, cfg.transport.heartbeat_interval,
                  cfg.transport.dead_after, cfg.transport.io_threads, log)
    log("start", role="server", rank=cfg.rank, dc=cfg.dc, keys=len(mine),
        bytes=sum(params.sizes()[k] for k in mine))
    active = set(workers)
    arrived = {}
    stop = False
    try:
        while active:
            m = ep.recv(watch=sorted(active))
            kind = m.header["type"]
            if kind == "bye":
                active.discard(m.sender)
                continue
            if kind != "push":
                continue
            arrived[m.sender] = m.last
            stop |= m.header.get("stop", False)
            if not rule.push(m.sender, m.header["it"], params.unpack(mine, m.payload)):
                continue
            ready = time.monotonic()
            it = rule.iteration
            new = rule.step()
            t_step = time.monotonic() - ready
            for t in pulls:
                vector = Parameters.pack(t.keys, new)
                ep.send(t.dst, {"type": "pull", "it": it, "keys": list(t.keys), "stop": stop,
                                "arrived": arrived[t.dst], "ready": ready, "sent": time.monotonic()},
                        vector)
            log("aggregate", it=it, ready=ready, step=t_step,
                first_push=min(arrived.values()), last_push=max(arrived.values()))
            arrived = {}
        log("done", iterations=rule.iteration)
    finally:
        ep.close()
