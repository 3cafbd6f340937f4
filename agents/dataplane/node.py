"""Builds an agent's executor node and its data plane from its config: the
overlay says whether the plan is fixed (every agent computes the same one
from the layout the runner wrote) or made on the fly with the coordinator."""

import dataclasses

from agents.dataplane.driver import DataPlane
from agents.dataplane.tree import TreeNode, segments
from agents.overlay import OVERLAYS
from agents.overlay.layout import Layout
from agents.transport import Endpoint


def segment_elements(cfg):
    return max(1, cfg.transport.chunk_bytes // 4)


def layout_of(cfg, size):
    return dataclasses.replace(Layout.from_dict(cfg.layout), size=int(size))


def build_node(cfg, initial, log):
    """The executor for this agent, or None where the overlay gives it
    nothing to do (a server outside the plan); `initial` is the flat
    initial model."""
    overlay = OVERLAYS[cfg.overlay]
    layout = layout_of(cfg, initial.size)
    if overlay.DYNAMIC:
        if not overlay.takes_part(cfg.name, layout):
            return None
        rule = sync_rule(cfg, initial)
        return overlay.Node(cfg.name, layout, segment_elements(cfg), rule.fold,
                            coordinator=cfg.coordinator.name)
    plan = overlay.plan(layout)
    if cfg.name not in plan.nodes:
        return None
    if cfg.name in [p.root for p in plan.pieces]:
        log("plan", overlay=overlay.NAME, plan=plan.to_dict())
    rule = sync_rule(cfg, initial)
    return TreeNode(cfg.name, plan, segment_elements(cfg), rule.fold)


def sync_rule(cfg, initial):
    """The sync scheme's root side, with the experiment's options."""
    from agents.sync import SCHEMES, settings  # here: the schemes build endpoints with this module
    scheme = SCHEMES[cfg.sync]
    return scheme.Rule(initial, cfg.workload, settings(scheme, cfg.sync_options))


def endpoint(cfg, log, queued=False):
    """This agent's Endpoint to every server, worker and the coordinator."""
    peers = {p.name: (p.host, p.port) for p in cfg.servers + cfg.workers if p.name != cfg.name}
    if cfg.coordinator is not None:
        peers[cfg.coordinator.name] = (cfg.coordinator.host, cfg.coordinator.port)
    return Endpoint(cfg.name, cfg.host, cfg.port, peers, cfg.transport.chunk_bytes,
                    cfg.transport.heartbeat_interval, cfg.transport.dead_after,
                    cfg.transport.io_threads, log, queued=queued)


def data_plane(cfg, node, log, side=None):
    ep = endpoint(cfg, log, queued=getattr(node, "QUEUED", False))
    per_piece = {i: len(segments(a, b, segment_elements(cfg)))
                 for i, (a, b) in enumerate(node.piece_ranges())}
    # A node whose pieces change between iterations says itself.
    return DataPlane(ep, node, log, segments_of=getattr(node, "segments_of", per_piece.get),
                     side=side)
