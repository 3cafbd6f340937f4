"""The composition root: which sync scheme, overlay, executor node and
data plane an agent gets, from its config.  It sits above everything it
assembles; nothing below imports it."""

import dataclasses

from agents.dataplane.driver import DataPlane
from agents.dataplane.node import overrides
from agents.dataplane.tree import TreeNode, segments
from agents.overlay import OVERLAY
from agents.overlay.layout import Layout
from agents.sync import SYNC
from agents.transport import Endpoint


def sync_scheme(cfg):
    """This experiment's sync scheme, with its options."""
    cls, _ = SYNC.load(cfg.sync)
    return cls(cfg.sync_options)


def overlay_of(cfg):
    """This experiment's overlay, with its options."""
    cls, _ = OVERLAY.load(cfg.overlay)
    return cls(Layout.from_dict(cfg.layout).options)


def segment_elements(cfg):
    return max(1, cfg.transport.chunk_bytes // 4)


def layout_of(cfg, model):
    """The run's layout with the sizes of `model` (agents.workload.FlatModel)."""
    return dataclasses.replace(Layout.from_dict(cfg.layout), size=int(model.values.size),
                               tensors=list(model.tensors))


def build_node(cfg, scheme, model, log):
    """The executor for this agent, or None where the overlay gives it
    nothing to do (a server outside the plan); `model` is the flat initial
    model (agents.workload.FlatModel)."""
    overlay = overlay_of(cfg)
    layout = layout_of(cfg, model)
    if overlay.DYNAMIC:
        if not overlay.takes_part(cfg.name, layout):
            return None
        rule = scheme.rule(model)
        return overlay.node(cfg.name, layout, segment_elements(cfg), rule.fold,
                            coordinator=cfg.coordinator.name)
    plan = overlay.plan(layout)
    if cfg.name not in plan.nodes:
        return None
    if cfg.name in [p.root for p in plan.pieces]:
        log("plan", overlay=overlay.NAME, plan=plan.to_dict())
    rule = scheme.rule(model)
    return TreeNode(cfg.name, plan, segment_elements(cfg), rule.fold)


def endpoint(cfg, log, queued=False):
    """This agent's Endpoint to every server, worker and the coordinator."""
    peers = {p.name: (p.host, p.port) for p in cfg.servers + cfg.workers if p.name != cfg.name}
    if cfg.coordinator is not None:
        peers[cfg.coordinator.name] = (cfg.coordinator.host, cfg.coordinator.port)
    return Endpoint(cfg.name, cfg.host, cfg.port, peers, cfg.transport.chunk_bytes,
                    cfg.transport.heartbeat_interval, cfg.transport.dead_after,
                    cfg.transport.io_threads, log, queued=queued)


def data_plane(cfg, node, log, side=None):
    ep = endpoint(cfg, log, queued=node.QUEUED)
    per_piece = {i: len(segments(a, b, segment_elements(cfg)))
                 for i, (a, b) in enumerate(node.piece_ranges())}
    # A node whose pieces change between iterations says itself.
    segments_of = node.segments_of if overrides(node, "segments_of") else per_piece.get
    return DataPlane(ep, node, log, segments_of=segments_of, side=side)
