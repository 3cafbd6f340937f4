"""The planner's coordinator side: probe estimates in, versioned plans out,
released at iteration boundaries every node agrees on (NetStorm's
protocol, `netstorm_policy`, whose bookkeeping this reuses).

Only the probes' packet trains count: the servers' own transfer samples,
and the goodput of real transfers the probes fold into their estimate,
read back the rates the plan paces connections to, or more than a link
carries when a burst that waited in a buffer arrives at once.  The change
that triggers a re-plan is the largest relative change of a link
direction's estimate (a mean over all links hides one link gone wrong, and
a plan is only as good as its worst link).  A DC pair's rate is the
highest its trains read within `estimate_memory` seconds: trains that
cross a link the plan keeps full read less than the link carries (they
queue behind its traffic), so the most recent reading alone would make
the plan chase its own load; a link that really slows down is followed
once the memory has passed.  A link's RTT is the least its probes read
within `rtt_memory` seconds: a ping that crosses a link the plan keeps
full waits behind the link's queue (a BDP of 48 kB is 0.39 s at 1 Mbit/s),
which is no part of the delay a plan's trees and fills pay once their
connections run at their planned rates; counted, it lengthens the plan's
latency (1.15 s against 0.78 s for one re-plan replayed on a run's
readings) and the fills its slices are sized by.  This is the propagation
delay as the least RTT seen, as TCP Vegas's BaseRTT and BBR's min_rtt take
it; an RTT that really grows is followed once the memory has passed.

A pair's first estimates are young: the probe's median over its last
trains (`agents.probe.estimator`) is at first one train, then the higher
of two, and a single train can read several percent high (9% on a
1 Mbit/s link in one run).  The plan made as soon as every link has an estimate
leans on such readings, and with the highest reading of the memory taken,
it keeps them until the memory passes; but a few percent never move an
estimate past `update_change`, so that plan would stay for the run (on the
9-DC WAN at a quarter rate one did: a link planned 9% over its rate,
8.6% on the plan's time).  So once a pair's estimate is the median of
`settle_readings` trains, its younger readings are forgotten, and a plan
made before every pair got there is made again when they all have.  A
re-plan is solved in a child process (`agents.planning.offload`; in a
thread it would hold the GIL the dispatching loop needs): iterations go
on being released under the plan in force, and the new one takes over
at the first release after it is ready.  On a WAN whose rates change
within an iteration (`optimal`'s docstring, `agents/planning/volatility`),
the memory is `volatile_memory` and the plan is not paced; switching
either way re-plans.  With `dispatch: 1` each plan is a family of
slices, and this side also runs each
iteration's `dispatcher.Dispatch`: it announces each block's slice to
the workers as it is given out (`ns_assign`), and the whole map to the
servers once every block is; the workers report each block's new values
as they arrive (`ns_arrived`).  Once every block of an iteration is
given out it logs a `dispatched` decision: the seconds since the
release and, per slice, the blocks it was given, its window, and the
least and the last round trip of its blocks, which say where a
dispatched synchronization waited.  Steered (`dispatch_steer`, the default) it keeps
each DC pair's last train as well, and at every read of the probes sets
the windows of each iteration still being given out anew from them
(`optimal.steered_windows`); the next block's end takes them.
"""

import dataclasses
import statistics

from agents.dataplane.dispatch import ARRIVED, ASSIGN
from agents.overlay import netstorm_policy, optimal
from agents.overlay.dispatcher import Dispatch
from agents.planning import offload
from agents.planning.volatility import Holding
from agents.planning.wan import GOODPUT_SHARE

RECENT_ITERATIONS = 3              # an iteration's duration is the median of the last three:
                                   # the one a redraw lands in runs long on its own


class Policy(netstorm_policy.Policy):
    scheme = optimal
    take_estimates = None          # the blended estimates are not read: take_probes is

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
        self.holding = Holding(optimal.option(layout, "update_change"),
                               optimal.option(layout, "volatile_memory"),
                               optimal.option(layout, "hold_iterations"))
        self.boundaries = []           # when the last iterations were released
        self.volatile = False          # whether rates change faster than plans run
        self.dispatching = {}          # iteration -> its Dispatch, until every block is given out
        self.windows = {}              # iteration -> under dispatch_steer, its windows on the latest readings

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
        bytes/s per link (`optimal.link_estimates`), RTTs as the least
        read within `rtt_memory` seconds."""
        now = self.clock()
        memory = optimal.option(self.layout, "estimate_memory")
        long_memory = optimal.option(self.layout, "volatile_memory")
        rtt_memory = optimal.option(self.layout, "rtt_memory")
        settle = optimal.option(self.layout, "settle_readings")
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
        self.holding.observe(now, optimal.link_estimates(self.pairs, routes, self.links))
        self.volatile = self.holding.volatile(now, self.iteration())
        self.estimates = optimal.link_estimates(self.long_pairs if self.volatile else self.pairs,
                                                routes, self.links)
        if optimal.option(self.layout, "dispatch_steer"):     # each next block's end takes the new windows
            self.windows = {it: self.steering(d.policy) for it, d in self.dispatching.items() if d.steered}

    def iteration(self):
        """Seconds an iteration lasts lately (None before two boundaries)."""
        gaps = [b - a for a, b in zip(self.boundaries, self.boundaries[1:])]
        return statistics.median(gaps) if gaps else None

    def on_message(self, sender, header):
        if header.get("type") == ARRIVED:
            return self._dispatch(header["it"], header["piece"], header["seg"])
        if header.get("type") != "ns_release":
            raise ValueError(f"the optimal planner's coordinator got an unknown request "
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
        memory = optimal.option(self.layout, "volatile_memory")
        means = {pair: statistics.fmean(v for t, v in seen if now - t <= memory)
                 for pair, seen in self.seen.items() if any(now - t <= memory for t, _ in seen)}
        out = [speeds]
        for pairs in (self.pairs, means):
            estimated = optimal.link_estimates(pairs, self.layout.routes, self.links)
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
        family = optimal.option(self.layout, "dispatch") and self._all_estimated()
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
        steer = bool(optimal.option(layout, "dispatch_steer"))
        control = (optimal.option(layout, "dispatch_alpha"), optimal.option(layout, "dispatch_beta")) \
            if optimal.option(layout, "dispatch_control") and not steer else None
        dispatch = Dispatch(optimal.blocks_of(self.policy, layout), len(self.policy["slices"]),
                            int(optimal.option(layout, "dispatch_window")), self.clock(),
                            contributors=len(layout.workers),
                            tail=bool(optimal.option(layout, "dispatch_tail")), control=control,
                            widest=int(optimal.option(layout, "dispatch_window_max")),
                            gamma=optimal.option(layout, "dispatch_gamma")
                            if optimal.option(layout, "dispatch_slow_start") else None,
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
        """Per slice of the family `policy` its window under `dispatch_steer`
        (`optimal.steered_windows`): its rate when the family's slices carry
        the most on the probes' latest readings (`optimal.family_rates`)."""
        layout = self.sized_layout()
        share = optimal.usable_share(layout)
        latest = {link: v * share for link, v in self.latest(self.speeds()).items()}
        return optimal.steered_windows(policy, optimal.family_rates(policy, latest, layout), layout)

    def latest(self, speeds):
        """Each link at its DC pair's latest reading where it has one, else
        as in `speeds`."""
        pairs = {pair: seen[-1][1] for pair, seen in self.seen.items() if seen}
        pairs.update(self.last)
        estimated = optimal.link_estimates(pairs, self.layout.routes, self.links)
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
                "pieces": optimal.pieces_planned(self.policy, self.sized_layout()),
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
    share = optimal.usable_share(layout)          # what the probes, ACKs and headers leave
    if readings is not None:
        policy = optimal.family_policy(
            [optimal.compute_policy({link: v * share for link, v in reading.items()}, delays, order, layout)
             for reading in readings])
    else:
        policy = optimal.compute_policy({link: v * share for link, v in speeds.items()}, delays,
                                        order, layout, previous)
    # Pacing at a guess would hold a link to it: pace only a plan of estimates,
    # and on a volatile WAN only if asked (the rates it was made on will not hold).
    policy["guessed"] = guessed
    policy["young"] = young
    policy["volatile"] = volatile
    # A family's loads are every slice's rate at once, no plan's: not paced.
    policy["pace"] = not guessed and not policy.get("dispatch") and (
        not volatile or bool(optimal.option(layout, "volatile_pace")))
    if volatile and optimal.option(layout, "multipath"):
        policy["routes"] = optimal.detour_routes(policy, speeds, order, layout)
    if volatile and optimal.option(layout, "backfill") and not guessed and not policy.get("dispatch"):
        optimal.backfill_trees(policy, speeds, order, layout)
    return policy
