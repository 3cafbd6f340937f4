"""Server: runs its sync scheme's server side.  By default that is an
overlay node without a contribution of its own: where the plan makes it a
piece's root it folds the sum in with the scheme's rule; elsewhere it
aggregates and relays for the nodes below it.  A scheme that does not
aggregate in trees (FedAsync) brings its own `serve`."""

import time

from agents.dataplane.node import build_node, data_plane
from agents.sync import SCHEMES, settings
from agents.transport import PeerDead
from agents.workload import parameters_for


def run(cfg, log):
    scheme = SCHEMES[cfg.sync]
    serve = getattr(scheme, "serve", None)
    if serve is not None:
        return serve(cfg, log, settings(scheme, cfg.sync_options))
    return aggregate(cfg, log)


def aggregate(cfg, log):
    params = parameters_for(cfg.workload)
    node = build_node(cfg, params.pack(list(params.shapes), params.initial), log)
    if node is None:
        log("done", iterations=0, reason=f"{cfg.overlay} gives this server no part")
        return
    plane = data_plane(cfg, node, log)
    log("start", role="server", rank=cfg.rank, dc=cfg.dc, roots=node.roots(), sync=cfg.sync,
        bytes=sum(params.sizes().values()))
    it = 0
    finished = False
    try:
        while it < cfg.max_iterations:
            t0 = time.monotonic()
            _, stop, last_started, _ = plane.iteration(it)
            if node.roots():
                log("aggregate", it=it, seconds=time.monotonic() - t0, last_started=last_started,
                    pieces=node.roots(), contributions=node.n)
            it += 1
            if stop:
                break
        linger(plane, node, log)
        log("done", iterations=it, bytes_in=sum(plane.ep.bytes_received.values()),
            bytes_out=sum(plane.ep.bytes_sent.values()), dropped=plane.ep.dropped,
            **getattr(node, "counters", {}))
        finished = True
    finally:
        # Only a normal end waits for its last data to leave.
        plane.close(drain=finished)


def linger(plane, node, log):
    """Stay, relaying, until every server the node waits for is done too
    (an overlay whose messages may detour through this server); a server
    that died meanwhile sends no more."""
    farewell = node.farewell() if hasattr(node, "farewell") else []
    if not farewell:
        return
    t0 = time.monotonic()
    plane.send(farewell)
    dead = None
    while node.lingering():
        try:
            plane.poll(timeout=0.2, watch=node.lingering())
        except PeerDead as e:
            dead = e.peer
            break
    log("linger", seconds=time.monotonic() - t0, dead=dead)
