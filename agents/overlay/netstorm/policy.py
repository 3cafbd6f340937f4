"""NetStorm's coordinator side: link speeds in, versioned policies out,
released at iteration boundaries every node agrees on.

Speeds (bytes/s per direction between neighbouring DCs) come from the
servers' own measurements (`ns_speed` reports, see `node`); a
link that carried no sample takes the probes' estimate; a link with
neither counts as equal to every other (the authors seeded random values
instead, which says nothing about the network).

Every `check_period` seconds, when the speeds changed since the policy in
force by more than `update_change` (the mean relative change over the
links that changed, as the original), the policy is recomputed and gets
the next version; `replan: 0` keeps the first one.

Consistency: each worker asks for the release of iteration t when it
starts it (`ns_release`); once every worker has, the coordinator answers
every node with the version in force for t, and the policy itself when
that version is new to them.  A version released for t is used by every
node for every piece of t, so no piece is aggregated under two trees.
"""

import time

from agents.coordination import CoordinatorService
from agents.overlay.netstorm import plan as ns

EQUAL_SPEED = 1.0          # bytes/s of a link nothing is known about: only ratios matter


class Policy(CoordinatorService):
    scheme = ns                    # the overlay module whose options and policies these are

    def __init__(self, layout, seed=0, clock=time.monotonic):
        self.layout = layout
        self.clock = clock
        self.order = ns.overlay_dcs(layout)
        on = set(self.order)
        self.links = []
        for a, b, *_ in layout.links:
            if a in on and b in on:
                self.links += [(a, b), (b, a)]
        self.nodes = ns.servers_by_dc(layout)
        self.everyone = sorted(set(self.nodes.values()) | set(layout.worker_names))
        self.samples = {}              # (a, b) -> bytes/s measured by the servers
        self.estimates = {}            # (a, b) -> bytes/s from the probes
        self.version = -1
        self.policy = None
        self.planned_on = None         # the speeds the policy in force was computed from
        self.released_version = -1
        self.waiting = {}              # it -> workers at the boundary
        self.next_check = None

    # ----------------------------------------------------------- inputs

    def speeds(self):
        return {link: self.samples.get(link) or self.estimates.get(link) or EQUAL_SPEED
                for link in self.links}

    def take_estimates(self, estimates):
        """Probe estimates {"a->b": bit/s}."""
        for key, bps in estimates.items():
            a, _, b = key.partition("->")
            if (a, b) in self.links and bps:
                self.estimates[(a, b)] = bps / 8

    def on_message(self, sender, header):
        """(replies [(dst, header)], decisions [dict])."""
        kind = header.get("type")
        if kind == "ns_speed":
            link = (header["src"], header["dst"])
            if link in self.links:
                self.samples[link] = header["rate"] / 8
            return [], []
        if kind == "ns_release":
            return self._release(sender, header["it"])
        raise ValueError(f"netstorm's coordinator got an unknown request {kind!r} from {sender}")

    def tick(self, now=None):
        """Re-plan when it is time and the speeds moved; [decision]."""
        now = self.clock() if now is None else now
        if self.policy is None or not self.scheme.option(self.layout, "replan"):
            return []
        if self.next_check is not None and now < self.next_check:
            return []
        self.next_check = now + self.scheme.option(self.layout, "check_period")
        speeds = self.speeds()
        change = self.change(speeds)
        if change is None or change <= self.scheme.option(self.layout, "update_change"):
            return []
        return self._replan(speeds, change)

    def _replan(self, speeds, change):
        """Plan for these speeds now; [decision]."""
        self._plan(speeds)
        return [self._replanned(change)]

    def _replanned(self, change):
        return {"decision": "replan", "version": self.version, "change": change, **self.summary()}

    # ----------------------------------------------------------- internals

    def _plan(self, speeds):
        self.policy = ns.compute_policy(speeds, self.order, self.layout)
        self.planned_on = speeds
        self.version += 1

    def sources(self):
        """Where each link's speed comes from: a server's sample, a probe, or
        nothing yet."""
        return {f"{a}->{b}": "sample" if (a, b) in self.samples else
                "probe" if (a, b) in self.estimates else "none" for a, b in self.links}

    def change(self, speeds):
        """How far `speeds` are from those the policy in force was made from."""
        return relative_change(self.planned_on, speeds)

    def summary(self):
        """What a decision records about the policy in force."""
        return {"roots": self.roots()}

    def roots(self):
        total = sum(self.policy["perf"].values())
        return {dc: round(p / total, 4) for dc, p in self.policy["perf"].items() if p > 0}

    def _release(self, worker, it):
        waiting = self.waiting.setdefault(it, set())
        if worker in waiting:
            raise ValueError(f"{worker} asked twice for the release of iteration {it}")
        waiting.add(worker)
        if len(waiting) < len(self.layout.workers):
            return [], []
        del self.waiting[it]
        if self.policy is None:
            self._plan(self.speeds())
        reply = {"type": "ns_policy", "it": it, "version": self.version}
        decisions = []
        if self.version != self.released_version:
            reply["policy"] = self.policy
            self.released_version = self.version
            decisions.append({"decision": "release", "it": it, "version": self.version,
                              **self.summary(),
                              "speeds": {f"{a}->{b}": s * 8 for (a, b), s in self.planned_on.items()},
                              "sources": self.sources()})
        return [(node, reply) for node in self.everyone], decisions


def relative_change(old, new):
    """Mean of |new - old| / old over the links whose speed changed; None
    when none did."""
    if old is None:
        return None
    changed = [abs(new[k] - old[k]) / old[k] for k in new if new[k] != old.get(k, new[k])]
    return sum(changed) / len(changed) if changed else None
