"""How long the coordinator's loop keeps a message waiting while a
re-plan is solved: in a thread of its own process, or in the solver
process (`agents.planning.offload`), against no re-plan at all.

A dispatched iteration of the 9-DC WAN makes the coordinator answer
about 900 messages a second (each block's arrival at each worker, each
block's announcement).  Here a peer process sends `--rate` messages a
second over a local ZeroMQ socket, each stamped, and the loop answers
each as the coordinator does (a blocking receive with a timeout, then a
reply); the peer reads each answer's round trip.  Meanwhile the loop's
process solves the planner's dispatched family for the 9-DC WAN (four
plans, `planner_policy.solve`) back to back (as the early iterations of a
run re-plan), in a thread or through the solver process.  It prints per mode the median and 99th percentile
round trip and the messages answered a second, and the ratio of the
thread's median to the solver process's, taken in the same run.

    .venv/bin/python benchmarks/replan_offload.py [--rate 900] [--seconds 8]
"""

import argparse
import multiprocessing
import statistics
import threading
import time

import zmq
from volatile_plans import layout_of

from agents.overlay.planner import policy as planner_policy
from agents.planning import offload
from testbed import spec as specmod

TOPOLOGY = "topologies/netstorm-9dc-dynamic.yaml"


def family_problem(elements):
    """`planner_policy.solve`'s arguments for a dispatched family of the
    9-DC WAN at its configured rates, read four ways as the planner does."""
    layout = layout_of(specmod.load(TOPOLOGY), elements)
    speeds, delays = {}, {}
    for a, b, rab, rba, dab, dba in layout.links:      # rates in bit/s, the plan's in bytes/s
        speeds.update({(a, b): rab / 8, (b, a): rba / 8})
        delays.update({(a, b): dab, (b, a): dba})
    readings = [speeds, {k: v * 0.8 for k, v in speeds.items()}, {k: v * 1.2 for k, v in speeds.items()},
                dict.fromkeys(speeds, statistics.fmean(speeds.values()))]
    return layout, speeds, readings, delays, sorted(layout.dcs), None, False, False, True


def peer(address, rate, seconds, out):
    """Send `rate` stamped messages a second for `seconds`; the round trips."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.connect(address)
    gap, rtts = 1.0 / rate, []
    start = time.monotonic()
    next_send = start
    while time.monotonic() - start < seconds:
        now = time.monotonic()
        if now >= next_send:
            sock.send_pyobj(now)
            next_send += gap
        # Wait for an answer until the next send is due: an answer is read the moment it comes.
        while sock.poll(max(0, int((next_send - time.monotonic()) * 1000))):
            rtts.append(time.monotonic() - sock.recv_pyobj())
            if time.monotonic() >= next_send:
                break
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and sock.poll(100):
        rtts.append(time.monotonic() - sock.recv_pyobj())
    out.put(rtts)
    sock.close(linger=0)


def measure(mode, problem, rate, seconds):
    """Round trips while the loop's process solves families back to back
    in `mode` ("none", "thread" or "process"); (round trips, answered a second)."""
    ctx = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    solver = offload.Solver()
    if mode == "process":
        solver.call(planner_policy.solve, *problem).result()     # started and warm, as after a first re-plan
    spawn = multiprocessing.get_context("spawn")
    out = spawn.Queue()
    sender = spawn.Process(target=peer, args=(f"tcp://127.0.0.1:{port}", rate, seconds, out))
    sender.start()
    stop = threading.Event()
    if mode == "thread":
        def solve_until_stopped():
            while not stop.is_set():
                planner_policy.solve(*problem)
        solving = threading.Thread(target=solve_until_stopped, daemon=True)
        solving.start()
    call, answered, start = None, 0, time.monotonic()
    while sender.is_alive() and out.empty():
        if router.poll(500):                    # as the coordinator's receive with a timeout
            ident, stamp = router.recv_multipart()
            router.send_multipart([ident, stamp])
            answered += 1
        if mode == "process" and (call is None or not call.is_alive()):
            call = solver.call(planner_policy.solve, *problem)     # as its tick: the next re-plan
    elapsed = time.monotonic() - start
    rtts = out.get()
    stop.set()
    if mode == "thread":
        solving.join()
    sender.join()
    solver.close()
    router.close(linger=0)
    return rtts, answered / elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=900.0, help="messages a second the peer sends")
    ap.add_argument("--seconds", type=float, default=8.0, help="how long the peer sends")
    ap.add_argument("--elements", type=int, default=625_000)
    args = ap.parse_args()
    problem = family_problem(args.elements)
    medians = {}
    for mode in ("none", "thread", "process"):
        rtts, per_second = measure(mode, problem, args.rate, args.seconds)
        medians[mode] = statistics.median(rtts)
        q = statistics.quantiles(rtts, n=100)
        print(f"{mode:8s} round trip median {medians[mode] * 1e3:6.2f} ms  p90 {q[89] * 1e3:6.2f} ms  "
              f"p99 {q[98] * 1e3:6.2f} ms  "
              f"answered {per_second:6.0f}/s  ({len(rtts)} messages)")
    print(f"thread / solver process, median round trip: {medians['thread'] / medians['process']:.2f}x")


if __name__ == "__main__":
    main()
