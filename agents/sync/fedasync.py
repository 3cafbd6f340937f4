"""FedAsync (Xie, Koyejo, Gupta, "Asynchronous Federated Optimization",
arXiv 1903.03934), with the staleness functions and defaults of FedLab's
and Plato's implementations (formulas as the paper writes them).

The root holds the model x and a version t.  Whenever a worker's model
x_new arrives, trained from version tau, with staleness s = t - tau:
    alpha_t = alpha * S(s);  x = (1 - alpha_t) x + alpha_t x_new;  t += 1
and that worker gets (x, t) back at once.  S is
    constant    1
    polynomial  (s + 1)^(-a)                          (a = poly_a, 0.5)
    hinge       1 if s <= b else 1 / (a (s - b) + 1)  (a = hinge_a 10, b = hinge_b 4)
Workers run `local_steps` (H) local steps on f(x) + (rho/2)||x - x_tau||^2
and never wait for each other, only for their own reply.

On the testbed: the model is cut across the server DC's servers as the
star cuts it; each server mixes its piece with a version of its own, so a
worker's staleness is counted per piece.  Asynchronous mixing folds one
model at a time, so there is nothing to aggregate on the way: it runs
over the star only.  A worker ends after max_iterations exchanges, or
when a reply carries the stop that rank 0 asked for on reaching the
target accuracy; a server ends once every worker has ended.
"""

import time

import numpy as np

from agents.overlay.ps import PS
from agents.plugins import Option
from agents.sync.base import SyncScheme
from agents.sync.local_sgd import LocalSGD


def staleness_weight(s, options):
    """S(s) of the chosen staleness function."""
    kind = options["staleness"]
    if kind == "constant":
        return 1.0
    if kind == "polynomial":
        return float((s + 1) ** -options["poly_a"])
    a, b = options["hinge_a"], options["hinge_b"]
    return 1.0 if s <= b else 1.0 / (a * (s - b) + 1.0)


class Mixer:
    """One root's model piece and its version."""

    def __init__(self, initial, options):
        self.x = np.array(initial, dtype=np.float32)
        self.version = 0
        self.options = options

    def mix(self, x_new, tau):
        """Fold in a model trained from version tau; returns (staleness, alpha_t)."""
        s = self.version - tau
        alpha_t = self.options["alpha"] * staleness_weight(s, self.options)
        self.x *= np.float32(1.0 - alpha_t)
        self.x += np.float32(alpha_t) * x_new
        self.version += 1
        return s, alpha_t


def pieces_of(layout):
    """The star's pieces of the model: who holds which element range."""
    return PS().plan(layout).pieces


class FedAsync(SyncScheme):
    NAME = "fedasync"
    DESCRIPTION = "asynchronous federated optimization: each model is mixed in on arrival"
    OPTIONS = (
        Option("local_steps", 10, "local steps (H) before each exchange", low=1, high=100_000),
        Option("alpha", 0.6, "mixing weight before the staleness function", low=0.0, high=1.0),
        Option("staleness", "polynomial", "the staleness function S(s)",
               choices=("constant", "polynomial", "hinge")),
        Option("poly_a", 0.5, "polynomial: S(s) = (s + 1)^-a", low=0.0, high=100.0),
        Option("hinge_a", 10.0, "hinge: slope a of 1 / (a (s - b) + 1)", low=0.0, high=1000.0),
        Option("hinge_b", 4, "hinge: staleness b up to which S is 1", low=0, high=100_000),
        Option("rho", 0.005, "weight of the proximal term (rho/2)||x - x_tau||^2",
               low=0.0, high=100.0),
    )
    # Mixing folds one model at a time: nothing to aggregate on the way.
    NEEDS = frozenset({"star"})

    def work(self, ctx):
        o = self.options
        pieces = pieces_of(ctx.layout())
        roots = sorted({p.root for p in pieces})
        ep = ctx.endpoint()
        local = LocalSGD(ctx, ctx.initial)
        anchor = ctx.initial.copy()                   # x_tau: the model last received
        versions = [0] * len(pieces)
        ctx.started()
        it, stop = 0, False
        while it < ctx.max_rounds and not stop:
            compute, loss = 0.0, None
            for _ in range(o["local_steps"]):
                loss, seconds, _ = local.step(anchor, o["rho"])
                compute += seconds
            last = it + 1 == ctx.max_rounds
            t_sync = time.monotonic()
            for i, p in enumerate(pieces):
                ep.send(p.root, {"type": "fa_push", "piece": i, "tau": versions[i], "last": last,
                                 "stop": ctx.want_stop}, local.w[p.start:p.stop])
            got = 0
            while got < len(pieces):
                m = ep.recv(watch=roots)
                if m.header.get("type") != "fa_model":
                    raise RuntimeError(f"{m.sender} sent a {m.header.get('type')} message to a "
                                       f"fedasync worker")
                p = pieces[m.header["piece"]]
                anchor[p.start:p.stop] = m.payload
                versions[m.header["piece"]] = m.header["version"]
                stop |= m.header["stop"]
                got += 1
            sync = time.monotonic() - t_sync
            local.load(anchor)
            ctx.record(it, compute, sync, 0.0, loss, steps=o["local_steps"], busy=0.0, overlap=0.0,
                       version=max(versions))
            it += 1
            ctx.evaluate(it, stop, final=last)
        if stop and not last:
            # The roots count this worker out only when told.
            for root in roots:
                ep.send(root, {"type": "fa_end"})
        ctx.finish(it, anchor)

    def serve(self, ctx):
        cfg, log = ctx.cfg, ctx.log
        initial = ctx.initial
        own = {i: p for i, p in enumerate(pieces_of(ctx.layout())) if p.root == cfg.name}
        if not own:
            log("done", iterations=0, reason="fedasync gives this server no part")
            return
        mixers = {i: Mixer(initial[p.start:p.stop], self.options) for i, p in own.items()}
        workers = {w.name for w in cfg.workers}
        ep = ctx.endpoint()
        log("start", role="server", rank=cfg.rank, dc=cfg.dc, roots=sorted(own), sync=self.NAME,
            bytes=int(initial.nbytes))
        ended = {i: set() for i in own}               # per piece, the workers that have ended
        stop = False
        finished = False
        try:
            while any(len(e) < len(workers) for e in ended.values()):
                m = ep.recv(watch=sorted(workers - set.intersection(*ended.values())))
                h = m.header
                if h.get("type") == "fa_end":
                    for e in ended.values():
                        e.add(m.sender)
                    continue
                if h.get("type") != "fa_push" or h.get("piece") not in mixers:
                    raise RuntimeError(f"{m.sender} sent {h.get('type')} for piece {h.get('piece')}, "
                                       f"which {cfg.name} does not hold")
                i = h["piece"]
                s, alpha_t = mixers[i].mix(m.payload, h["tau"])
                stop |= h["stop"]
                ep.send(m.sender, {"type": "fa_model", "piece": i, "version": mixers[i].version,
                                   "stop": stop}, mixers[i].x.copy())
                log("mix", worker=m.sender, piece=i, staleness=s, alpha=alpha_t,
                    version=mixers[i].version)
                if h["last"]:
                    ended[i].add(m.sender)
            log("done", iterations=max(mx.version for mx in mixers.values()),
                bytes_in=sum(ep.bytes_received.values()), bytes_out=sum(ep.bytes_sent.values()))
            finished = True
        finally:
            ep.close(drain=finished)
