"""Where each slice of a planner run waited: reads the `pieces` events of a
run made with `overlay_options: {trace_pieces: 1}` and the coordinator's
releases, and prints, per iteration, how long the synchronization took
against the plan's finish, when each slice finished, and for the slice
that finished last, what the plan expected of it (rate, elements, fill)
and every hop of its path to the worker that got its last values: when
the hop's first and last segments arrived and the rate in between.

A slice's path is found backwards from that worker: its values came down
from its DC's server, which got them from its parent in the broadcast
tree, up to the root; the root summed the partial sums of its children,
the last of which is followed down the reduce tree to a worker.  Times
are seconds from when the last worker began the iteration: the
coordinator releases an iteration to every worker at once, so that is
when the synchronization could start everywhere.  A hop whose first
segment arrives late waited upstream; one whose first and last segments
lie far apart was slow itself.

    .venv/bin/python results/planner-figure/trace.py RUN [--iterations 2,5]
"""

import argparse
import glob
import os

from agents.events import read_events


def traces(run):
    """{agent: {iteration: pieces event}}."""
    out = {}
    for path in glob.glob(os.path.join(run, "agents", "*.jsonl")):
        agent = os.path.basename(path)[:-len(".jsonl")]
        events = {e["it"]: e for e in read_events(path) if e["ev"] == "pieces"}
        if events:
            out[agent] = events
    return out


def plans(run):
    """{version: release decision} from the coordinator's log."""
    return {e["version"]: e for path in glob.glob(os.path.join(run, "agents", "*-c.jsonl"))
            for e in read_events(path) if e["ev"] == "decision" and e.get("decision") == "release"}


def rows_of(event):
    """{(piece, kind, sender): (first, last, count)}."""
    return {(p, k, s): (first, last, n) for p, k, s, first, last, n in event["rows"]}


def critical_path(it, piece, worker, by_agent):
    """[(receiver, kind, sender, first, last, count)] from the root's last
    partial sum down to `worker`'s new values, root side first."""
    down, node = [], worker
    while True:
        hops = [(k, s, *v) for (p, k, s), v in rows_of(by_agent[node][it]).items()
                if p == piece and k == "dist"]
        if not hops:
            break
        (kind, sender, first, last, n), = hops
        down.append((node, kind, sender, first, last, n))
        node = sender
    up = []
    while True:
        hops = [(k, s, *v) for (p, k, s), v in rows_of(by_agent[node][it]).items()
                if p == piece and k == "agg"]
        if not hops:
            break
        kind, sender, first, last, n = max(hops, key=lambda h: h[3])
        up.append((node, kind, sender, first, last, n))
        node = sender
    return list(reversed(up)) + list(reversed(down))


def hop_rate(elements, first, last, n):
    """Mbit/s between a hop's first and last segments (the first one's bytes
    arrived before the clock started), None for one segment."""
    return elements * 32 * (n - 1) / n / (last - first) / 1e6 if n > 1 and last > first else None


def report(run, iterations=None):
    if not os.path.isdir(os.path.join(run, "agents")):
        raise SystemExit(f"{run} is not a run folder: it has no agents/ folder")
    by_agent = traces(run)
    planned = plans(run)
    workers = sorted(a for a in by_agent if "-w" in a)
    if not workers:
        raise SystemExit(f"{run} has no `pieces` events: run it with trace_pieces: 1")
    its = sorted(set.intersection(*(set(by_agent[w]) for w in workers)))
    for it in iterations or its:
        if it not in its:
            raise SystemExit(f"iteration {it} is not traced in every worker of {run}")
        start = max(by_agent[w][it]["began"] for w in workers)
        end = max(by_agent[w][it]["ended"] for w in workers)
        version = by_agent[workers[0]][it].get("version")
        plan = planned.get(version, {})
        pieces = plan.get("pieces")
        finish = {}                       # piece -> (time its last values reached a worker, worker)
        for w in workers:
            for (piece, kind, _), (_, last, _) in rows_of(by_agent[w][it]).items():
                if kind == "dist" and last > finish.get(piece, (0.0, None))[0]:
                    finish[piece] = (last, w)
        order = sorted(finish, key=lambda p: finish[p][0])
        expected = f", planned {plan['finish']:.2f} s" if isinstance(plan.get("finish"), (int, float)) else ""
        print(f"iteration {it} (version {version}): {end - start:.2f} s{expected}; slices done at "
              + ", ".join(f"{p}: {finish[p][0] - start:.1f}" for p in order))
        slowest = order[-1]
        shape = ""
        if pieces and slowest < len(pieces):
            p = pieces[slowest]
            shape = (f" (root {p['root']}, {p['elements']} values at {p['rate'] / 1e6:.2f} Mbit/s, "
                     f"fill {p['fill']:.2f} s: due at {p['fill'] + 32 * p['elements'] / p['rate']:.2f})")
        print(f"  slice {slowest}, the last, to {finish[slowest][1]}{shape}:")
        for node, kind, sender, first, last, n in critical_path(it, slowest, finish[slowest][1], by_agent):
            rate = hop_rate(pieces[slowest]["elements"], first, last, n) if shape else None
            print(f"    {kind:4} {sender:>8} -> {node:<8} first {first - start:6.2f}  "
                  f"last {last - start:6.2f}  ({n} segments" + (f", {rate:.2f} Mbit/s)" if rate else ")"))


def iteration_list(text):
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of iterations")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--iterations", type=iteration_list,
                    help="comma-separated iteration numbers (default: all)")
    args = ap.parse_args()
    try:
        report(args.run, args.iterations)
    except BrokenPipeError:             # read through `head`: what was printed is what was wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)


if __name__ == "__main__":
    main()
