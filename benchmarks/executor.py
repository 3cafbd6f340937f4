"""What the tree executor costs a relay per segment, as segments get finer.

A relay with two contributing children under a root, the model cut into
the 18 pieces of a plan with two trees per root on nine DCs: one
iteration played through `TreeNode` in memory (its own contribution,
both children's partial sums, the new values coming back), with the
node asked `done` after every message as the data plane asks it.  For
each segment size it prints the messages handled and the CPU seconds per
message, then the ratio of the finest to the coarsest.  The executor's
work per segment does not depend on how many segments there are, so the
ratio is about 1 (under 1 where per-message costs other than the copy
shrink with the segment); a cost that grows with the segment count, as a
scan of every segment per message does, shows as a ratio well above 1.

    .venv/bin/python benchmarks/executor.py [--elements 2500000] [--pieces 18]
"""

import argparse
import time

import numpy as np

from agents.dataplane.plan import Piece, Plan, even_cuts
from agents.dataplane.tree import TreeNode

SEGMENTS = (4096, 2048, 1024)      # elements per segment: the planner's floor and finer


def relay_plan(elements, pieces):
    parent = {"relay": "root", "w0": "relay", "w1": "relay"}
    children = {"root": ["relay"], "relay": ["w0", "w1"]}
    return Plan(elements, ("w0", "w1", "relay"),
                tuple(Piece(a, b, "root", parent, children) for a, b in even_cuts(elements, pieces))
                ).validate()


def one_iteration(plan, segment):
    """(messages, CPU seconds) of the relay's part in one iteration."""
    node = TreeNode("relay", plan, segment, fold=None)
    values = np.ones(plan.size, np.float32)
    agg = {"type": "agg", "it": 0, "count": 1, "stop": False, "started": 0.0}
    dist = {"type": "dist", "it": 0, "stop": False, "started": 0.0}
    messages = 0
    began = time.process_time()
    node.start(0, values)
    for child in ("w0", "w1"):
        for i, j, a, b in node.segs:
            node.on_message(child, {**agg, "piece": i, "seg": j}, values[a:b])
            node.done(0)
            messages += 1
    for i, j, a, b in node.segs:
        node.on_message("root", {**dist, "piece": i, "seg": j}, values[a:b])
        node.done(0)
        messages += 1
    seconds = time.process_time() - began
    if not node.done(0):
        raise SystemExit("the relay did not finish its iteration")
    return messages, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=2_500_000)
    ap.add_argument("--pieces", type=int, default=18)
    args = ap.parse_args()
    plan = relay_plan(args.elements, args.pieces)
    per_message = {}
    for segment in SEGMENTS:
        messages, seconds = one_iteration(plan, segment)
        per_message[segment] = seconds / messages
        print(f"segments of {segment:>5} elements: {messages:>6} messages, "
              f"{seconds:.3f} s CPU, {per_message[segment] * 1e6:.1f} us per message")
    ratio = per_message[SEGMENTS[-1]] / per_message[SEGMENTS[0]]
    print(f"per-message cost, {SEGMENTS[-1]} against {SEGMENTS[0]} elements: {ratio:.2f}x")


if __name__ == "__main__":
    main()
