"""Server: runs its sync scheme's server side (`SyncScheme.serve`).  By
default that is an overlay node without a contribution of its own: where
the plan makes it a piece's root it folds the sum in with the scheme's
rule; elsewhere it aggregates and relays for the nodes below it."""

import time

from agents.roles.compose import build_node, data_plane, endpoint, layout_of, sync_scheme
from agents.transport import PeerDead
from agents.workload import FlatModel, parameters_for


class ServerContext:
    """What a scheme's server side is given: its config and log, the
    initial model as one flat vector, a transport endpoint and the layout,
    and the data plane's own loop (`aggregate`)."""

    def __init__(self, cfg, log, scheme):
        self.cfg = cfg
        self.log = log
        self.scheme = scheme
        self.options = scheme.options
        self.params = parameters_for(cfg.workload)
        self.model = FlatModel.of(self.params, cfg.workload)
        self.initial = self.model.values

    def endpoint(self):
        return endpoint(self.cfg, self.log)

    def layout(self):
        return layout_of(self.cfg, self.model)

    def aggregate(self):
        return aggregate(self)


def run(cfg, log):
    scheme = sync_scheme(cfg)
    return scheme.serve(ServerContext(cfg, log, scheme))


def aggregate(ctx):
    """The data plane's server loop: play this server's part in every
    iteration until the workers stop."""
    cfg, log = ctx.cfg, ctx.log
    node = build_node(cfg, ctx.scheme, ctx.model, log)
    if node is None:
        log("done", iterations=0, reason=f"{cfg.overlay} gives this server no part")
        return
    plane = data_plane(cfg, node, log)
    log("start", role="server", rank=cfg.rank, dc=cfg.dc, roots=node.roots(), sync=cfg.sync,
        bytes=sum(ctx.params.sizes().values()))
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
            bytes_out=sum(plane.ep.bytes_sent.values()),
            **node.counts())
        finished = True
    finally:
        # Only a normal end waits for its last data to leave.
        plane.close(drain=finished)


def linger(plane, node, log):
    """Stay, relaying, until every server the node waits for is done too
    (an overlay whose messages may detour through this server); a server
    that died meanwhile sends no more."""
    farewell = node.farewell()
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
