"""What a segment costs a relay's CPU, as segments get finer: in the tree
executor, and in the transport that carries it.

The executor: a relay with two contributing children under a root, the
model cut into the 18 pieces of a plan with two trees per root on nine
DCs, one iteration played through `TreeNode` in memory (its own
contribution, both children's partial sums, the new values coming back),
the node asked `done` after every message as the data plane asks it.  It
prints the CPU seconds per message for each segment size, then the ratio
of the finest to the coarsest: the executor's work per segment does not
depend on how many segments there are, so the ratio is at most about 1
(under 1 where the fixed costs are spread over less copying); a cost that
grows with the segment count, as a scan of every segment per message
does, shows as a ratio well above 1.

The transport: the same model's segments sent one message each from one
Endpoint to another over loopback, in the queued mode the planner's and
NetStorm's nodes use (a flow of the fair queue per piece), the receiver a
process of its own; CPU seconds per message on each side.  A segment pays
both on every hop of its trees, so the transport's cost per message is
what finer segments multiply.

    .venv/bin/python benchmarks/segment_cost.py [--elements 2500000] [--pieces 18]
"""

import argparse
import multiprocessing
import time

import numpy as np

from agents.dataplane.plan import Piece, Plan, even_cuts
from agents.dataplane.tree import TreeNode
from agents.transport import Endpoint

PORTS = (47100, 47101)             # the sender's and the receiver's, on 127.0.0.1
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


def receive(messages, report):
    ep = Endpoint("receiver", "127.0.0.1", PORTS[1], {"sender": ("127.0.0.1", PORTS[0])},
                  queued=True, dead_after=30)
    report.put("ready")
    began = time.process_time()
    for _ in range(messages):
        ep.recv(timeout=30)
    report.put(time.process_time() - began)
    ep.close(drain=False)


def transport(elements, pieces, segment):
    """CPU seconds per message (send, receive) of one model's segments."""
    messages = -(-elements // segment)
    report = multiprocessing.Queue()
    receiver = multiprocessing.Process(target=receive, args=(messages, report))
    receiver.start()
    report.get()
    ep = Endpoint("sender", "127.0.0.1", PORTS[0], {"receiver": ("127.0.0.1", PORTS[1])},
                  queued=True, dead_after=30)
    values = np.ones(segment, np.float32)
    header = {"type": "agg", "it": 0, "count": 1, "stop": False, "started": 0.0}
    began = time.process_time()
    for j in range(messages):
        ep.send("receiver", {**header, "piece": j % pieces, "seg": j}, values,
                flow=(0, j % pieces, "agg"), weight=1.0)
    ep.flush(timeout=60)
    sent = time.process_time() - began
    received = report.get()
    receiver.join()
    ep.close(drain=False)
    return sent / messages, received / messages


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
        print(f"executor, segments of {segment:>5} elements: {messages:>6} messages, "
              f"{seconds:.3f} s CPU, {per_message[segment] * 1e6:.1f} us per message")
    ratio = per_message[SEGMENTS[-1]] / per_message[SEGMENTS[0]]
    print(f"executor's cost per message, {SEGMENTS[-1]} against {SEGMENTS[0]} elements: {ratio:.2f}x")
    for segment in SEGMENTS:
        sent, received = transport(args.elements, args.pieces, segment)
        print(f"transport, segments of {segment:>5} elements: {sent * 1e6:.1f} us to send and "
              f"{received * 1e6:.1f} us to receive a message")


if __name__ == "__main__":
    main()
