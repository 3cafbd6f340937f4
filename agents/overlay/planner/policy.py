"""The planner's coordinator side: probe estimates in, versioned plans out,
released at iteration boundaries every node agrees on (NetStorm's
protocol, `netstorm.policy`, whose bookkeeping this reuses).

Only the probes' packet trains count: the servers' transfer samples and
the goodput of real transfers read back the rates the plan paces
connections to, or more than a link carries when a burst that waited in
a buffer arrives at once.  A re-plan is triggered by the largest relative
change of a link direction's estimate (a mean hides one link gone wrong,
and a plan is only as good as its worst link).

A DC pair's rate is the highest its trains read within `estimate_memory`
seconds: trains that cross a link the plan keeps full read less than the
link carries, so the latest reading alone would make the plan chase its
own load; a link that really slows down is followed once the memory has
passed.  A link's RTT is the least its probes read within `rtt_memory`
seconds: a ping across a full link waits behind its queue, which is no
part of the delay the plan's trees pay once their connections run at
their planned rates.

A pair's first estimates are young (the probe's median over its last
trains is at first one train), and a plan on them could stand for the
whole run, since a few percent never move an estimate past
`update_change`.  So once a pair's estimate is the median of
`settle_readings` trains its younger readings are forgotten, and a plan
made before every pair got there is made again when they all have.

Re-plans are solved in a child process (`agents.planning.offload`; in a
thread they would hold the GIL the dispatching loop needs): iterations go
on under the plan in force, and the new one takes over at the first
release after it is ready.  On a volatile WAN (`agents/planning/volatility`)
the memory is `volatile_memory` and the plan is unpaced; switching either
way re-plans.

Dispatched (`dispatch` other than `off`), each plan is a family of
slices, and this side also runs each iteration's `dispatcher.Dispatch`:
it announces each block's slice to the workers as it is given out
(`ns_assign`), and the whole map to the servers once every block is; the
workers report each block's new values as they arrive (`ns_arrived`).
Once every block is given out it logs a `dispatched` decision: the
seconds since the release and, per slice, the blocks it carried, its
window, and the least and the last round trip of its blocks.  Steered
(`dispatch: steer`), it keeps each DC pair's last train as well and, at
every read of the probes, sets the windows of each iteration still being
given out anew from them (`plan.steered_windows`); the next block's end
takes them.
"""

import dataclasses
import statistics

from agents.dataplane.dispatch import ARRIVED, ASSIGN
from agents.overlay.netstorm import policy as netstorm_policy
from agents.overlay.planner import plan
from agents.overlay.planner.dispatcher import Dispatch
from agents.overlay.planner.options import PlannerOptions
from agents.planning import offload
from agents.planning.volatility import Holding
from agents.planning.wan import GOODPUT_SHARE

RECENT_ITERATIONS = 3              # an iteration's duration is the median of the last three:
                                   # the one a redraw lands in runs long on its own


class Policy(netstorm_policy.Policy):
    scheme = plan

    def take_estimates(self, estimates):
        """The blended estimates are not read: `take_probes` is."""

    def __init__(self, layout, seed=0, clock=netstorm_policy.time.monotonic):
        super().__init__(layout, seed, clock)
        # Every link direction, transit DCs' included: their routers forward the plan's bytes.
        self.links = [link for a, b, *_ in layout.links for link in ((a, b), (b, a))]
        self.rtts = {}                 # (a, b) -> seconds, the least the probes read lately
        self.rtts_seen = {}            # (a, b) -> [(time, seconds)] within rtt_memory
        self.pairs = {}                # (a, b) -> payload bytes/s the probes see from DC a to DC b
        self.long_pairs = {}           # the same within volatile_memory
        self.size = layout.size        # the model's elements, as the workers report them
        self.seen = {}                 # (a, b) -> [(time, payload bytes/s)] within either memory
        self.settled = set()           # pairs whose estimate has been the median of settle_readings
        self.last = {}                 # (a, b) -> payload bytes/s the pair's last train read
        self.solver = offload.Solver()  # re-plans run in a child process, off the dispatching loop
        self.solving = None            # the `offload.Call` of a re-plan under way
        self.solving_for = None        # (speeds, change) it plans for
        opts = PlannerOptions.of(layout)
        self.holding = Holding(opts.update_change, opts.volatile_memory, opts.hold_iterations)
        self.boundaries = []           # when the last iterations were released
        self.volatile = False          # whether rates change faster than plans run
        self.dispatching = {}          # iteration -> its Dispatch, until every block is given out
        self.windows = {}              # iteration -> steered, its windows on the latest readings

    def speeds(self):
        """Estimated payload bytes/s per link; a link not yet estimated
        counts as the slowest that is, so a plan does not lean on it."""
        known = [self.estimates[link] for link in self.links if link in self.estimates]
        guess = min(known) if known else netstorm_policy.EQUAL_SPEED
        return {link: self.estimates.get(link, guess) for link in self.links}

    def delays(self):
        return {link: self.rtts[link] / 2 for link in self.links if link in self.rtts}

    def take_probes(self, probes):
        """The probes' own numbers per DC pair, {"a->b": {"active": wire
        bit/s of the packet trains, "rtt": seconds}}: rates as payload
        bytes/s per link (`plan.link_estimates`), RTTs as the least
        read within `rtt_memory` seconds."""
        now = self.clock()
        opts = PlannerOptions.of(self.layout)
        memory, long_memory, rtt_memory = opts.estimate_memory, opts.volatile_memory, opts.rtt_memory
        settle = opts.settle_readings
        for key, probe in probes.items():
            a, _, b = key.partition("->")
            if (a, b) not in self.settled and (probe.get("readings") or 0) >= settle:
                self.settled.add((a, b))
                self.seen.pop((a, b), None)        # its younger readings are forgotten
            if probe.get("active"):
                seen = self.seen.setdefault((a, b), [])
                seen.append((now, probe["active"] * GOODPUT_SHARE / 8))
                seen[:] = [(t, v) for t, v in seen if now - t <= max(memory, long_memory)]
                self.pairs[(a, b)] = max(v for t, v in seen if now - t <= memory)
                self.long_pairs[(a, b)] = max(v for t, v in seen if now - t <= long_memory)
            if probe.get("last"):
                self.last[(a, b)] = probe["last"] * GOODPUT_SHARE / 8
            if probe.get("rtt") and (a, b) in self.links:
                rtts = self.rtts_seen.setdefault((a, b), [])
                rtts.append((now, probe["rtt"]))
                rtts[:] = [(t, v) for t, v in rtts if now - t <= rtt_memory]
                self.rtts[(a, b)] = min(v for t, v in rtts)
        routes = self.layout.routes
        self.holding.observe(now, plan.link_estimates(self.pairs, routes, self.links))
        self.volatile = self.holding.volatile(now, self.iteration())
        self.estimates = plan.link_estimates(self.long_pairs if self.volatile else self.pairs,
                                                routes, self.links)
        if opts.dispatch == "steer":     # each next block's end takes the new windows
            self.windows = {it: self.steering(d.policy) for it, d in self.dispatching.items() if d.steered}

    def iteration(self):
        """Seconds an iteration lasts lately (None before two boundaries)."""
        gaps = [b - a for a, b in zip(self.boundaries, self.boundaries[1:])]
        return statistics.median(gaps) if gaps else None

    def on_message(self, sender, header):
        if header.get("type") == ARRIVED:
            return self._dispatch(header["it"], header["piece"], header["seg"])
        if header.get("type") != "ns_release":
            raise ValueError(f"the planner's coordinator got an unknown request "
                             f"{header.get('type')!r} from {sender}")
        self.size = header.get("size", self.size)
        return super().on_message(sender, header)

    def _plan(self, speeds):
        self._adopt(self._solve(speeds), speeds)

    def sized_layout(self):
        """The layout with the model's size as the workers report it."""
        return dataclasses.replace(self.layout, size=self.size)

    def readings(self, speeds):
        """The rates a dispatched family is planned on: `speeds` (the
        planner's own reading: on a volatile WAN the highest within
        `volatile_memory`), the highest within `estimate_memory`, the mean
        within `volatile_memory`, and every link at that mean's mean (a
        plan for the graph alone)."""
        now = self.clock()
        memory = PlannerOptions.of(self.layout).volatile_memory
        means = {pair: statistics.fmean(v for t, v in seen if now - t <= memory)
                 for pair, seen in self.seen.items() if any(now - t <= memory for t, _ in seen)}
        out = [speeds]
        for pairs in (self.pairs, means):
            estimated = plan.link_estimates(pairs, self.layout.routes, self.links)
            out.append({link: estimated.get(link, v) for link, v in speeds.items()})
        mean = statistics.fmean(out[-1].values())
        out.append(dict.fromkeys(speeds, mean))
        return out

    def _solve(self, speeds):
        return solve(*self._problem(speeds))

    def _problem(self, speeds):
        """`solve`'s arguments for a plan on `speeds`, from this side's state."""
        # Asked for, a family is planned from the first estimates on: judging a WAN
        # volatile takes some three iterations, run meanwhile on a plan that holds.
        family = PlannerOptions.of(self.layout).dispatch != "off" and self._all_estimated()
        return (self.sized_layout(), speeds, self.readings(speeds) if family else None, self.delays(),
                self.order, self.policy, not self._all_estimated(), not self._all_settled(), self.volatile)

    def _adopt(self, policy, speeds):
        self.policy = policy
        self.planned_on = speeds
        self.version += 1

    def tick(self, now=None):
        """Adopt a re-plan that is ready, else check as NetStorm does.  [decision]."""
        if self.solving is not None:
            if self.solving.is_alive():
                return []
            policy, (speeds, change) = self.solving.result(), self.solving_for
            self.solving = None
            self._adopt(policy, speeds)
            return [self._replanned(change)]
        return super().tick(now)

    def _replan(self, speeds, change):
        """Solve in the solver process; `tick` adopts the plan once it is ready."""
        self.solving = self.solver.call(solve, *self._problem(speeds))
        self.solving_for = (speeds, change)
        return []

    def close(self):
        self.solver.close()

    def change(self, speeds):
        """Largest relative change of a link since the plan in force.  A
        plan made while some links had no estimate stays until every link
        has one (a plan on half the numbers can be far worse than one on
        none), and is then redone in full; so is a plan made for the other
        kind of WAN, steady or volatile, and a plan made on young estimates
        once they have all settled."""
        if self.policy is not None and self.policy["guessed"]:
            return 1.0 if self._all_estimated() else None
        if self.policy is not None and self.policy["young"] and self._all_settled():
            return 1.0
        if self.policy is not None and self.policy["volatile"] != self.volatile:
            return 1.0
        old = self.planned_on
        return max(abs(speeds[k] - old[k]) / old[k] for k in speeds) if old else None

    def _release(self, worker, it):
        replies, decisions = super()._release(worker, it)
        if replies:                    # every worker is at the boundary: an iteration begins
            # RECENT_ITERATIONS + 1 boundaries make that many iterations.
            self.boundaries = self.boundaries[-RECENT_ITERATIONS:] + [self.clock()]
            if self.policy.get("dispatch"):
                first, done = self._first_blocks(it)
                replies, decisions = replies + first, decisions + done
        return replies, decisions

    def _first_blocks(self, it):
        """The announcement that starts a dispatched iteration (`dispatcher`),
        as `_announce`."""
        layout = self.sized_layout()
        opts = PlannerOptions.of(layout)
        steer = opts.dispatch == "steer"
        control = (opts.dispatch_alpha, opts.dispatch_beta) if opts.dispatch == "vegas" else None
        dispatch = Dispatch(plan.blocks_of(self.policy, layout), len(self.policy["slices"]),
                            int(opts.dispatch_window), self.clock(),
                            contributors=len(layout.workers), control=control,
                            widest=int(opts.dispatch_window_max),
                            windows=self.steering(self.policy) if steer else None)
        dispatch.policy = self.policy           # the family it dispatches, whatever is adopted meanwhile
        self.dispatching[it] = dispatch
        return self._announce(it, dispatch, dispatch.first)

    def _dispatch(self, it, s, block):
        """A contributor got the new values of `block` of slice `s` in
        iteration `it`: what the dispatcher gives out for it, as
        `_announce`; an iteration is forgotten once all its blocks are
        given out."""
        dispatch = self.dispatching.get(it)
        if dispatch is None:
            return [], []
        now = self.clock()
        pairs = dispatch.arrived_at_one(s, block, now)
        windows = self.windows.get(it)
        if windows is not None and windows != list(dispatch.window.values()):
            pairs += dispatch.steer(windows, now)       # the readings moved since it was last steered
        return self._announce(it, dispatch, pairs)

    def steering(self, policy):
        """Per slice of the family `policy` its window when steered
        (`plan.steered_windows`): its rate when the family's slices carry
        the most on the probes' latest readings (`plan.family_rates`)."""
        layout = self.sized_layout()
        latest = self.latest(self.speeds())
        return plan.steered_windows(policy, plan.family_rates(policy, latest, layout), layout)

    def latest(self, speeds):
        """Each link at its DC pair's latest reading where it has one, else
        as in `speeds`."""
        pairs = {pair: seen[-1][1] for pair, seen in self.seen.items() if seen}
        pairs.update(self.last)
        estimated = plan.link_estimates(pairs, self.layout.routes, self.links)
        return {link: estimated.get(link, v) for link, v in speeds.items()}

    def _announce(self, it, dispatch, pairs):
        """The workers hear of each block as it is given out: they send it
        up.  The servers need the whole map only to know when they are done
        (a partial sum names its slice), so they hear it once, when the
        last block is given out, and the iteration is forgotten, with a
        `dispatched` decision: the seconds since the release and, per slice,
        [blocks given, window, least and last round trip].  (replies, decisions)."""
        out, decisions = [], []
        if pairs:
            header = {"type": ASSIGN, "it": it, "blocks": pairs}
            out += [(w, header) for w in self.layout.worker_names]
        if dispatch.done():
            del self.dispatching[it]
            header = {"type": ASSIGN, "it": it, "blocks": dispatch.given}
            out += [(node, header) for node in sorted(self.nodes.values())]
            decisions.append({"decision": "dispatched", "it": it, "seconds": self.clock() - dispatch.began,
                              "slices": dispatch.summary()})
        return out, decisions

    def _all_estimated(self):
        return all(link in self.estimates for link in self.links)

    def _all_settled(self):
        """Every pair the estimates come from has settled."""
        return all(pair in self.settled for pair in self.pairs)

    def sources(self):
        return {f"{a}->{b}": "probe" if (a, b) in self.estimates else "none" for a, b in self.links}

    def summary(self):
        return {"roots": self.roots(), "rate": self.policy["rate"] * 8, "volatile": self.policy["volatile"],
                "latency": self.policy["latency"], "finish": self.policy.get("finish"),
                "slices": len(self.policy["slices"]),
                "pieces": plan.pieces_planned(self.policy, self.sized_layout()),
                "trees": self.trees(), "loads": {k: v * 8 for k, v in self.policy["loads"].items()}}

    def trees(self):
        """Per root its share and the union of its slices' reduce and
        broadcast connections, as [child, parent] and [parent, child]."""
        out = {}
        for s in self.policy["slices"]:
            tree = out.setdefault(s["root"], {"root": s["root"], "share": 0.0,
                                              "aggregation": [], "distribution": []})
            tree["share"] += s["rate"] / self.policy["rate"]
            tree["aggregation"] += [a for a in s["reduce"] if a not in tree["aggregation"]]
            tree["distribution"] += [a for a in s["broadcast"] if a not in tree["distribution"]]
        return [out[root] for root in sorted(out)]

    def roots(self):
        share = {}
        for s in self.policy["slices"]:
            share[s["root"]] = share.get(s["root"], 0.0) + s["rate"]
        total = sum(share.values()) or 1.0
        return {dc: round(r / total, 4) for dc, r in sorted(share.items())}


def solve(layout, speeds, readings, delays, order, previous, guessed, young, volatile):
    """A plan on `speeds` (payload bytes/s per link): with `readings`, a
    dispatched family of one plan per reading, else one plan, warm-started
    from `previous`.  `guessed`: some link has no estimate; `young`: some
    pair has not settled; `volatile`: rates change within an iteration.
    Pure, so a child process can run it (`offload`)."""
    if readings is not None:
        policy = plan.family_policy(
            [plan.compute_policy(reading, delays, order, layout) for reading in readings])
    else:
        policy = plan.compute_policy(speeds, delays, order, layout, previous)
    # Pacing at a guess would hold a link to it: pace only a plan of estimates,
    # and on a volatile WAN only if asked (the rates it was made on will not hold).
    policy["guessed"] = guessed
    policy["young"] = young
    policy["volatile"] = volatile
    # A family's loads are every slice's rate at once, no plan's: not paced.
    policy["pace"] = not guessed and not policy.get("dispatch") and (
        not volatile or bool(PlannerOptions.of(layout).volatile_pace))
    return policy
