"""Coordinator: one per experiment, in the server DC (as ps-lite's
scheduler).  It answers the overlay's scheduling requests, keeps the
network's view (the probes' estimates and the transfers the agents
measure), and records every decision as an event.  Its messages travel
over the emulated network like everything else."""

import os
import time

from agents.overlay.layout import Layout
from agents.probe.matrix import MatrixSubscriber
from agents.probe.passive import PassiveReader
from agents.roles.compose import overlay_of, sync_scheme
from agents.transport import Endpoint, RecvTimeout
from agents.watchdog import LoopWatchdog

VIEW_EVERY = 5.0      # seconds between two records of the network's view
UPDATE_EVERY = 0.5    # seconds between two reads of the probes and transfers


class NetworkView:
    """Per DC direction, the latest probe estimate and the latest goodput
    of a real transfer, in bit/s."""

    def __init__(self, probes, probe_pub_port, folder, agents):
        self.sub = MatrixSubscriber([(p.host, probe_pub_port) for p in probes]) if probes else None
        dc_of = {a.name: a.dc for a in agents}
        # What each DC's agents received, like each DC's probe reads it.
        self.readers = {dc: PassiveReader([os.path.join(folder, f"{a.name}.jsonl")
                                           for a in agents if a.dc == dc], dc_of)
                        for dc in sorted(set(dc_of.values()))}
        self.estimates = {}
        self.probes = {}          # "a->b" -> the probe's own numbers: trains' estimate, RTT
        self.transfers = {}

    def update(self):
        """True when something changed."""
        changed = False
        if self.sub is not None and self.sub.poll(0):
            for (src, dst), est in self.sub.matrix.items():
                if not est.get("settled", True):
                    continue        # a start-up guess, published only to size trains
                changed |= self.estimates.get(f"{src}->{dst}") != est["bw"]
                self.estimates[f"{src}->{dst}"] = est["bw"]
                self.probes[f"{src}->{dst}"] = {"active": est.get("active"), "last": est.get("last"),
                                                "rtt": est.get("rtt"), "readings": est.get("readings")}
        for dst, reader in self.readers.items():
            for src, _, goodput in reader.read():
                if src != dst:
                    self.transfers[f"{src}->{dst}"] = goodput
                    changed = True
        return changed

    def close(self):
        if self.sub is not None:
            self.sub.close()


def run(cfg, log):
    overlay = overlay_of(cfg)
    layout = Layout.from_dict(cfg.layout)
    policy = overlay.policy(layout, seed=cfg.workload.seed) if overlay.DYNAMIC else None
    scheme = sync_scheme(cfg)
    # A sync scheme's own service (ESync's state server) takes its message types.
    service = scheme.service([w.name for w in cfg.workers])
    agents = cfg.servers + cfg.workers
    view = NetworkView(cfg.probes, cfg.view.probe_pub_port if cfg.view else 0,
                       os.path.dirname(cfg.events), agents)
    ep = Endpoint(cfg.name, cfg.host, cfg.port, {a.name: (a.host, a.port) for a in agents},
                  cfg.transport.chunk_bytes, cfg.transport.heartbeat_interval,
                  cfg.transport.dead_after, cfg.transport.io_threads, log, source=cfg.host)
    log("start", role="coordinator", dc=cfg.dc, overlay=overlay.NAME, schedules=policy is not None,
        sync=scheme.NAME, serves_sync=service is not None)
    last_view = last_update = -VIEW_EVERY
    changed = False
    watchdog = LoopWatchdog("coordinator")
    try:
        while True:
            watchdog.beat()
            try:
                m = ep.recv(timeout=UPDATE_EVERY)
            except RecvTimeout:
                m = None
            if m is not None:
                if service is not None and m.header.get("type") in service.TYPES:
                    replies, decisions = service.on_message(m.sender, m.header)
                elif policy is None:
                    raise RuntimeError(f"{m.sender} asked the coordinator of the static overlay "
                                       f"{overlay.NAME} for a decision")
                else:
                    replies, decisions = policy.on_message(m.sender, m.header)
                for dst, header in replies:
                    ep.send(dst, header)
                for d in decisions:
                    log("decision", **d)
            now = time.monotonic()
            if now - last_update >= UPDATE_EVERY:
                changed = view.update() or changed
                last_update = now
                if policy is not None:
                    policy.take_estimates(view.estimates)
                    policy.take_probes(view.probes)
            for d in policy.tick() if policy is not None else ():
                log("decision", **d)
            if changed and now - last_view >= VIEW_EVERY:
                log("view", estimates=dict(view.estimates), transfers=dict(view.transfers))
                last_view, changed = now, False
    finally:
        watchdog.stop()
        if policy is not None:
            policy.close()              # a policy's solver process, if it has one
        if service is not None:
            service.close()
        view.close()
        ep.close(drain=False)      # stopped by the runner: nothing left to deliver
