"""How good a plan that holds its shape through a synchronization can be on
a WAN whose rates are redrawn while it runs, and which rates to plan on.

A plan fixes how much of the model each link carries (its slices'
trees); on links whose rates change, link l with share s_l of the model
is done once its changing rate has carried s_l M, so the plan takes the
latest such time plus what it adds to M / R (its fills).  Which fixed
plan is best depends on the rates to come, not the rates now: on a link
redrawn every 10 s under a synchronization of 10-15 s, the rate now
holds for a part of it.

For start times spread over the topology's dynamics (expanded from its
own generators, `--horizon` seconds), this plans with the planner's own
`compute_policy` on several readings of the true rates (no probe error):
- `now`: the rates at the start;
- `max`: each link's highest rate in the last `--memory` seconds (the
  planner's reading on a volatile WAN, `optimal_policy`);
- `mean`: each link's time-weighted mean rate over the same seconds;
- `blend`: each link's expected mean over the next `--sync` seconds, the
  rate now for half a redraw period (a redraw met at a random moment
  holds that long on average), the `mean` after it;
- `equal`: every link at the mean of all links' `mean`, a plan for the
  graph alone;
- `hindsight`: each link's mean rate over the synchronization itself (a
  fixed point in T: on those means a plan that takes T carries exactly
  what the links carry in T), what a plan that holds its shape would
  want to know and cannot.  It is no bound (the planner's packing keeps
  few trees, and the fixed point is sought in a few rounds, so a reading
  can beat it at one start), but what it leaves to t_lb is what moving
  bytes between trees within a synchronization is worth;
and two plans that move bytes between trees as the links change
(`dispatched_time`, the fluid time of `agents/dataplane/dispatch`):
- `dispatched`: the `max` plan's own slices;
- `family`: the slices of the `max`, `now`, `mean` and `equal` plans
  together (`planner.family_policy`; the planner's own readings of a
  volatile WAN are the highest within 60 s and within 8 s, the mean and
  its mean, `optimal_policy.readings`);
and prints, for each, the median over start times of the plan's
time on the links as they were divided by t_lb of the same links from
the same start (`testbed.bounds.timeline.bound_while`, which lets every
byte move between trees at any moment), and the median ratio of each
reading's time to hindsight's.

    .venv/bin/python benchmarks/volatile_plans.py [--topology topologies/netstorm-9dc-dynamic.yaml]
        [--elements 625000] [--every 10] [--horizon 300] [--step 3.3] [--sync 14]
"""

import argparse
import dataclasses
import statistics

from agents.overlay.planner import plan as planner
from agents.config import Peer
from agents.planning.evaluate import link_shares
from testbed import spec as specmod
from testbed.bounds.model import wan_of
from testbed.bounds.timeline import bound_while, time_to_carry, wan_states
from testbed.run.runner import overlay_layout

SPAN = 120.0        # seconds of the links' future a start's plans and bound may meet
FAMILY = ("max", "now", "mean", "equal")    # the readings `optimal_policy.readings` plans a family on


def layout_of(spec, elements):
    servers = [Peer(f"{d.name}-s0", "", 0, d.name) for d in spec.datacenters if d.servers]
    workers = [Peer(f"{d.name}-w{i}", "", 0, d.name) for d in spec.datacenters for i in range(d.workers)]
    return dataclasses.replace(overlay_layout(spec, servers, workers), size=elements)


def link_changes(spec, horizon, every):
    """links.jsonl-like changes of the topology's dynamics up to `horizon`,
    each generator's period set to `every` seconds."""
    out = []
    for schedule in spec.dynamics:
        if schedule.kind == "generator" and "every" in schedule.generator[1]:
            name, params = schedule.generator
            schedule = dataclasses.replace(schedule, generator=(name, {**params, "every": every}))
        for action in schedule.actions(horizon):
            if getattr(action, "rate", None) is None:
                continue
            pairs = [(action.a, action.b)] + ([(action.b, action.a)] if action.both else [])
            out += [{"wall": action.t, "src": a, "dst": b, "rate": action.rate} for a, b in pairs]
    return out


class Profile:
    """Each link direction's payload rate over time, from the WAN states."""

    def __init__(self, spec_doc, changes):
        self.docs = wan_states(spec_doc, changes)
        self.states = [(t, wan_of(doc)) for t, doc in self.docs]
        self.links = list(self.states[0][1].links)

    def pieces(self, link, start, end):
        """[(from, to, bytes/s)] of a link within [start, end]."""
        out = []
        for k, (t, wan) in enumerate(self.states):
            until = self.states[k + 1][0] if k + 1 < len(self.states) else float("inf")
            lo, hi = max(t, start), min(until, end)
            if hi > lo:
                out.append((lo, hi, wan.links[link][0]))
        return out

    def now(self, start):
        return {link: self.pieces(link, start, start + 1e-9)[0][2] for link in self.links}

    def highest(self, start, memory):
        return {link: max(r for _, _, r in self.pieces(link, start - memory, start + 1e-9))
                for link in self.links}

    def mean(self, start, end):
        return {link: sum((b - a) * r for a, b, r in self.pieces(link, start, end)) / (end - start)
                for link in self.links}

    def time_to_carry(self, link, start, nbytes):
        return time_to_carry([(a - start, r) for a, _, r in self.pieces(link, start, float("inf"))], nbytes)

    def bound(self, start, model_bytes):
        first = max(i for i, (t, _) in enumerate(self.docs) if t <= start)
        spanned = [(max(t - start, 0.0), doc) for t, doc in self.docs[first:] if t <= start + SPAN]
        return bound_while(spanned, model_bytes)


def plan(speeds, delays, layout):
    order = planner.overlay_dcs(layout)
    return planner.compute_policy(speeds, delays, order, layout)


def time_as_run(policy, layout, profile, start, model_bytes):
    extra = policy["finish"] - model_bytes / policy["rate"]
    return max(profile.time_to_carry(link, start, model_bytes * s)
               for link, s in link_shares(policy["loads"], policy["rate"], layout.routes).items()) + extra


def dispatched_time(policy, layout, profile, start, model_bytes):
    """Seconds a dispatched `policy` (`agents/dataplane/dispatch`) takes in
    the fluid model: at every moment its slices carry the most bytes a
    second the links allow (an LP over the slices' rates, a slice loading
    each link of its connections' paths once per byte for each connection
    that crosses it), as a dispatcher that hands each block to a slice the
    moment one can take it would; plus the plan's fills, as `time_as_run`.
    It ignores how long a block takes to climb and descend its trees: the
    time of a dispatcher that never waits on one."""
    carried, fills = 0.0, policy["finish"] - model_bytes / policy["rate"]
    for k, (t, wan) in enumerate(profile.states):
        until = profile.states[k + 1][0] if k + 1 < len(profile.states) else float("inf")
        if until <= start:
            continue
        lo = max(t, start)
        rate = sum(planner.family_rates(policy, {link: c for link, (c, _) in wan.links.items()}, layout))
        if rate > 0 and carried + rate * (until - lo) >= model_bytes:
            return lo + (model_bytes - carried) / rate - start + fills
        carried += rate * (until - lo)
    return float("inf")


def blended(profile, start, memory, horizon, holds):
    """Each link's expected mean rate over the next `horizon` seconds: its
    rate now for the `holds` seconds it is expected to keep it, its mean
    over the last `memory` seconds after that (redraws are independent,
    so the past mean is the best guess of a rate to come)."""
    now, mean = profile.now(start), profile.mean(start - memory, start)
    w = min(holds, horizon) / horizon
    return {link: w * now[link] + (1 - w) * mean[link] for link in profile.links}


def equal(rates):
    """Every link at the mean of `rates`: a plan for the WAN's graph alone."""
    mean = statistics.fmean(rates.values())
    return dict.fromkeys(rates, mean)


def hindsight(profile, layout, delays, start, model_bytes, guess, rounds=4):
    """The plan on each link's mean rate over its own run: T from `guess`,
    re-planned on the means over [start, start + T] until T settles."""
    best = float("inf")
    t = guess
    for _ in range(rounds):
        took = time_as_run(plan(profile.mean(start, start + t), delays, layout), layout, profile, start,
                           model_bytes)
        best = min(best, took)
        if abs(took - t) < 0.02 * t:
            break
        t = took
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", default="topologies/netstorm-9dc-dynamic.yaml")
    parser.add_argument("--elements", type=int, default=625000)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between redraws")
    parser.add_argument("--memory", type=float, default=60.0, help="seconds max and mean look back")
    parser.add_argument("--horizon", type=float, default=300.0)
    parser.add_argument("--step", type=float, default=3.3, help="seconds between start times")
    parser.add_argument("--sync", type=float, default=14.0, help="seconds a synchronization lasts")
    args = parser.parse_args()
    for name in ("elements", "every", "memory", "step", "sync"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be above 0, not {getattr(args, name):g}")
    if args.horizon < args.memory + SPAN:
        parser.error(f"--horizon must leave --memory ({args.memory:g} s) and {SPAN:g} s after a start, "
                     f"so at least {args.memory + SPAN:g} s, not {args.horizon:g}")
    try:
        spec = specmod.load(args.topology)
    except (OSError, specmod.SpecError) as e:
        parser.error(str(e))
    if not spec.dynamics:
        parser.error(f"{args.topology} has no dynamics: its links are never redrawn")
    layout = layout_of(spec, args.elements)
    model_bytes = 4 * args.elements
    spec_doc = dataclasses.asdict(spec)      # a run folder's spec.json
    profile = Profile(spec_doc, link_changes(spec, args.horizon, args.every))
    delays = {link: d for link, (_, d) in profile.states[0][1].links.items()}
    readings = {
        "now": lambda start: profile.now(start),
        "max": lambda start: profile.highest(start, args.memory),
        "mean": lambda start: profile.mean(start - args.memory, start),
        # A redraw every `every` seconds, met at a random moment, holds for half of that.
        "blend": lambda start: blended(profile, start, args.memory, args.sync, args.every / 2),
        "equal": lambda start: equal(profile.mean(start - args.memory, start))}
    rows = {name: [] for name in list(readings) + ["hindsight", "dispatched", "family"]}
    start = args.memory
    while start + SPAN <= args.horizon:
        bound = profile.bound(start, model_bytes)
        plans = {name: plan(read(start), delays, layout) for name, read in readings.items()}
        times = {name: time_as_run(p, layout, profile, start, model_bytes) for name, p in plans.items()}
        times["hindsight"] = hindsight(profile, layout, delays, start, model_bytes, times["mean"])
        times["dispatched"] = dispatched_time(plans["max"], layout, profile, start, model_bytes)
        family = planner.family_policy([plans[name] for name in FAMILY])
        times["family"] = dispatched_time(family, layout, profile, start, model_bytes)
        for k, v in times.items():
            rows[k].append((v / bound, v / times["hindsight"]))
        print(f"start {start:6.1f} s  t_lb {bound:6.2f} s  " +
              "  ".join(f"{k} {v / bound:5.2f}x" for k, v in times.items()), flush=True)
        start += args.step
    print(f"\n{len(rows['now'])} start times, every {args.every:g} s, {model_bytes / 1e6:g} MB:")
    for k, v in rows.items():
        print(f"  {k:10s} median {statistics.median(a for a, _ in v):5.2f}x t_lb as run, "
              f"{statistics.median(b for _, b in v):5.2f}x hindsight's")


if __name__ == "__main__":
    main()
