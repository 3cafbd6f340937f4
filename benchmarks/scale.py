"""How large a WAN this machine emulates faithfully, measured in one run.

For N = 3, 6, 9, 12 and 16 DCs on a ring with chords (testbed.spec.topogen; a
server and a worker per DC, 20 Mbit/s and 10 ms per direction by default),
with every WAN link direction carrying an iperf3 flow at once, it measures:

* build and teardown time of the network;
* agent start: seconds from the network being up to the first training
  iteration, in a short real experiment on the same topology (one server and
  one worker per DC, a tiny synthetic model);
* goodput / expected per link direction with every direction saturated by
  TCP at once (expected = wire rate x 1448/1514, as `testbed selftest`);
* RTT - configured per link, with every direction loaded by a flow paced at
  `--paced` (90%) of its rate.  Under a saturating TCP flow the RTT also
  holds the bottleneck queue, which TCP fills by design and the spec sizes
  (one BDP by default), so it says nothing about the emulator; at 90% the
  queue stays near empty while the delay lines, the bridges and the CPU
  carry almost the same frame rate, so what remains is the emulator's own
  error;
* CPU: the whole machine's busy share (of all cores) and the delay lines'
  own CPU (share of one core), in the saturated phase, and per frame
  crossing a WAN link (both directions counted) the machine's busy time
  and the delay lines' own CPU time (which holds the kernel work their
  sends set off downstream: the next bridge and router's, done in their
  context).

`--delay-backend none` builds the same WANs with no delay line at all
(routers joined directly, HTB only; RTTs are then compared with zero): the
machine's own price for the network, which no delay line can go below.
Its CPU per frame, taken off a delay line's at the same size, is what that
delay line adds per frame when it serves that many links.  Its goodput is
not a fidelity figure: with no delay the queues are the whole round trip,
and a link carrying TCP both ways then lets one direction fall to about
half (each flow alone, or two flows one way, hold 1.00).

Goal: every direction within 5% of its expected goodput and every RTT within
2 ms of the configured one.  Expected goodput ignores the other
direction's ACKs, which take about 2% of each direction when both carry a
flow, so about 0.98 is the ceiling here.  `lost` counts flows that never
got going or whose connection went.  Where a size misses the goal, the
`limit` column names what ran out: `cpu` when the machine was more than 95%
busy (busy = not idle), `delay line` when the compiled delay line's
processes (one per core) used more than 80% of their cores.

    sudo .venv/bin/python benchmarks/scale.py [--sizes 3,6,9,12,16] [--seconds 8]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from testbed import spec as specmod
from testbed.records.cpu import CpuMeter
from testbed.emulation import measure, network
from testbed.emulation.capability import DELAY_BACKENDS
from testbed.emulation.delay import NoDelay
from testbed.emulation.network import run_in
from testbed.spec.topogen import ring_with_chords
from agents.planning.wan import GOODPUT_SHARE

GOODPUT_TOLERANCE = 0.05
RTT_TOLERANCE = 0.002
CPU_FULL = 0.95
DELAY_LINE_FULL = 0.8      # of each process's core: it also waits on a 1 ms tick
BASE_PORT = 5301
FLOW_LIFETIME = 600      # seconds; flows are stopped after their last sweep


def directions(net):
    """[(index, key, sender host, receiver host, wire rate, port)] for every
    WAN link direction: from the source DC's first server to the
    destination DC's first worker."""
    out = []
    for index, link in enumerate(net.spec.wan):
        for n, (key, src, dst, d) in enumerate((("ab", link.a, link.b, link.ab),
                                                ("ba", link.b, link.a, link.ba))):
            out.append((index, key, f"{src}-s0", f"{dst}-w0", d.rate, BASE_PORT + 2 * index + n))
    return out


def delay_line_cpu(net):
    """CPU seconds the delay lines have used so far (None without them)."""
    if not net.backend.uses_relays:
        return None
    # One process may serve several links and report its CPU for each.
    by_pid = {s["pid"]: s["cpu_s"] for s in net.backend.stats().values()}
    return sum(by_pid.values())


def start_flows(net, flows, seconds, paced=None):
    """One iperf3 flow per direction (server sends, client -R receives);
    `paced`: a share of the wire rate to pace the sender at."""
    procs = []
    for _, _, src, dst, rate, port in flows:
        procs.append(net.node(src).popen(["iperf3", "-s", "-1", "-p", str(port)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for _, _, src, _, _, port in flows:
        wait_listening(net, src, port)
    for _, _, src, dst, rate, port in flows:
        args = ["iperf3", "-c", net.ip(src), "-p", str(port), "-R", "-t", str(seconds)]
        if paced:
            # Small writes: iperf3 paces by whole writes, and its default
            # 128 KB write would fill the queue in bursts.
            args += ["-b", str(int(rate * GOODPUT_SHARE * paced)), "-l", "2896"]
        procs.append(net.node(dst).popen(args, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
    return procs


def wait_listening(net, host, port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run_in(net.node(host), ["ss", "-Hltn", f"sport = :{port}"], check=False).strip():
            return
        time.sleep(0.05)
    raise network.NetworkError(f"iperf3 server on {host}:{port} did not start")


def finish(procs):
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def acked(net, flows):
    """{port: (time, bytes acked)} for every flow's sender: one `ss` per
    sending host, all at once, so a sweep of 48 flows on a busy machine
    takes about as long as one."""
    hosts = sorted({src for _, _, src, _, _, _ in flows})
    t0 = time.monotonic()
    procs = [net.node(h).popen(["ss", "-Htin", "state", "established"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True) for h in hosts]
    by_host = {h: measure.acked_by_port(p.communicate()[0]) for h, p in zip(hosts, procs)}
    at = (t0 + time.monotonic()) / 2
    return {port: (at, by_host[src].get(port, 0)) for _, _, src, _, _, port in flows}


def wait_flowing(net, flows, timeout=20.0):
    """Wait until every flow has had bytes acknowledged (starting 48
    clients on a busy machine takes seconds).  Returns the last sweep."""
    deadline = time.monotonic() + timeout
    while True:
        sweep = acked(net, flows)
        if all(b > 0 for _, b in sweep.values()) or time.monotonic() > deadline:
            return sweep
        time.sleep(0.2)


def stop(procs):
    for p in procs:
        p.terminate()
    finish(procs)


def saturated_phase(net, seconds, warmup=2.0):
    """[(link index, key, goodput/expected)], machine busy share, delay-line
    CPU share of one core, machine busy seconds per WAN frame, the delay
    lines' own CPU seconds per WAN frame."""
    flows = directions(net)
    # The flows run until stopped, so none ends before the last sweep.
    procs = start_flows(net, flows, FLOW_LIFETIME)
    try:
        wait_flowing(net, flows)
        time.sleep(warmup)
        frames0 = measure.wan_frames(net)
        meter, relay0, t0 = CpuMeter(), delay_line_cpu(net), time.monotonic()
        first = acked(net, flows)
        time.sleep(seconds - 1.0)
        last = acked(net, flows)
        busy, relay1, t1 = meter.busy(), delay_line_cpu(net), time.monotonic()
        frames = measure.wan_frames(net) - frames0
    finally:
        stop(procs)
    ratios = []
    for index, key, _, _, rate, port in flows:
        (ta, ba), (tb, bb) = first[port], last[port]
        # A flow that never got going, or whose connection went (an
        # overloaded machine), has no goodput to compare: None.
        ok = ba > 0 and bb > ba
        ratios.append((index, key, (bb - ba) * 8 / (tb - ta) / (rate * GOODPUT_SHARE)
                       if ok else None))
    relay = None if relay0 is None else (relay1 - relay0) / (t1 - t0)
    per_frame = busy * os.cpu_count() * (t1 - t0) / frames if frames else None
    line_per_frame = relay * (t1 - t0) / frames if frames and relay is not None else None
    return ratios, busy, relay, per_frame, line_per_frame


def paced_phase(net, seconds, share, warmup=1.5):
    """[(link index, RTT - configured)] with every direction paced at
    `share` of its rate; machine busy share."""
    flows = directions(net)
    procs = start_flows(net, flows, FLOW_LIFETIME, paced=share)
    try:
        wait_flowing(net, flows)
        time.sleep(warmup)
        meter = CpuMeter()
        count = max(5, int((seconds - 0.5) / 0.2))
        pings = []
        for index, link in enumerate(net.spec.wan):
            src, dst = f"{link.a}-s0", f"{link.b}-w0"
            pings.append((index, link, net.node(src).popen(
                ["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "5", net.ip(dst)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)))
        errors = []
        delayed = net.backend.name != "none"
        for index, link, p in pings:
            out, _ = p.communicate(timeout=seconds + 30)
            rtts = sorted(float(m) / 1e3 for m in re.findall(r"time=([\d.]+) ms", out))
            median = rtts[len(rtts) // 2] if rtts else float("inf")
            errors.append((index, median - delayed * (link.ab.delay + link.ba.delay)))
        busy = meter.busy()
    finally:
        stop(procs)
    return errors, busy


def warm_arp(net):
    """One ping per measured pair, so the first measurement is not an ARP's."""
    procs = [net.node(f"{link.a}-s0").popen(["ping", "-c", "1", "-W", "5", net.ip(f"{link.b}-w0")],
                                            stdout=subprocess.DEVNULL)
             for link in net.spec.wan] + \
            [net.node(f"{link.b}-s0").popen(["ping", "-c", "1", "-W", "5", net.ip(f"{link.a}-w0")],
                                            stdout=subprocess.DEVNULL)
             for link in net.spec.wan]
    finish(procs)


def agent_start(n, args, root):
    """Seconds from network up to the first iteration in a short real run."""
    from testbed.analysis import report
    from testbed.run import runner
    experiment = ("experiment:\n  workload: synthetic\n  model: flat-100000\n"
                  "  compute_time: 10ms\n  stop: {iterations: 3, time: 3min}\n")
    path = os.path.join(root, f"ring-{n}.yaml")
    with open(path, "w") as f:
        f.write(ring_with_chords(n, args.bw, args.delay, experiment=experiment))
    spec = specmod.load(path)
    outcome = runner.run(spec, root, delay_backend=args.delay_backend,
                         show=lambda *a, **k: None, say=lambda *a, **k: None)
    if outcome.status != "completed":
        raise SystemExit(f"error: the {n}-DC run failed: {outcome.reason}")
    return report.summarize(outcome.folder)["agents_ready"]


def measure_size(n, args, root):
    spec = specmod.loads(ring_with_chords(n, args.bw, args.delay), source=f"<ring-{n}>")
    t0 = time.monotonic()
    if args.delay_backend == "none":
        emulated = network.build(spec, backend=NoDelay())
    else:
        emulated = network.build(spec, delay_backend=args.delay_backend)
    row = {"dcs": n, "links": len(spec.wan), "build_s": time.monotonic() - t0}
    with emulated as net:
        row["backend"] = net.backend.name
        warm_arp(net)
        ratios, busy, relay, per_frame, line_per_frame = saturated_phase(net, args.seconds)
        errors, paced_busy = paced_phase(net, args.seconds, args.paced)
        t_down = time.monotonic()
    row["teardown_s"] = time.monotonic() - t_down
    row.update(goodput=ratios, rtt_error=errors, cpu_busy=busy, cpu_busy_paced=paced_busy,
               delay_line_cpu=relay, cpu_per_frame=per_frame, delay_line_per_frame=line_per_frame)
    with_agents = args.agents and args.delay_backend != "none"
    row["agent_start_s"] = agent_start(n, args, root) if with_agents else None
    measured = [r for _, _, r in ratios if r is not None]
    row["lost_flows"] = len(ratios) - len(measured)
    row["worst_goodput_error"] = max(abs(r - 1) for r in measured) if measured else None
    row["worst_rtt_error"] = max(abs(e) for _, e in errors)
    worst_goodput, worst_rtt = row["worst_goodput_error"], row["worst_rtt_error"]
    row["meets_goal"] = (not row["lost_flows"] and worst_goodput <= GOODPUT_TOLERANCE
                         and worst_rtt <= RTT_TOLERANCE)
    row["limit"] = limit(row)
    return row


def limit(row):
    """What ran out: the machine's cores, or the compiled delay line's
    (one process per core, each bound to its core), or nothing seen."""
    if max(row["cpu_busy"], row["cpu_busy_paced"]) > CPU_FULL:
        return "cpu"
    if row["backend"] == "crelay" and \
            (row["delay_line_cpu"] or 0) > DELAY_LINE_FULL * min(row["links"], os.cpu_count()):
        return "delay line"
    return "-"


def table(rows):
    head = (f"{'DCs':>4} {'links':>5} {'build s':>8} {'start s':>8} {'down s':>7} "
            f"{'CPU busy':>9} {'us/frame':>9} {'delay line':>11} {'line us/fr':>10} "
            f"{'goodput/exp':>17} {'RTT err ms':>11} "
            f"{'lost':>5} {'goal':>5} {'limit':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        g = [x for _, _, x in r["goodput"] if x is not None] or [float("nan")]
        start = "-" if r["agent_start_s"] is None else f"{r['agent_start_s']:.1f}"
        relay = "-" if r["delay_line_cpu"] is None else f"{r['delay_line_cpu'] * 100:.0f}%"
        frame = "-" if r["cpu_per_frame"] is None else f"{r['cpu_per_frame'] * 1e6:.1f}"
        line = "-" if r["delay_line_per_frame"] is None else f"{r['delay_line_per_frame'] * 1e6:.1f}"
        lines.append(f"{r['dcs']:>4} {r['links']:>5} {r['build_s']:>8.1f} {start:>8} "
                     f"{r['teardown_s']:>7.1f} {r['cpu_busy'] * 100:>8.0f}% {frame:>9} {relay:>11} "
                     f"{line:>10} "
                     f"{min(g):>8.3f}-{max(g):<8.3f} {r['worst_rtt_error'] * 1e3:>11.2f} "
                     f"{r['lost_flows']:>5} {'yes' if r['meets_goal'] else 'no':>5} {r['limit']:>10}")
    return "\n".join(lines)


def details(row):
    lines = [f"  ring-{row['dcs']}: per link direction goodput/expected, per link RTT error"]
    rtt = dict(row["rtt_error"])
    for index, key, ratio in row["goodput"]:
        shown = "lost" if ratio is None else f"{ratio:.3f}"
        lines.append(f"    link {index:>2} {key}: goodput/expected {shown}"
                     + (f"   RTT error {rtt[index] * 1e3:+.2f} ms" if key == "ab" else ""))
    return "\n".join(lines)


def sizes(text):
    """--sizes: DC counts of at least 3 (a ring with chords needs three)."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 3:
        raise argparse.ArgumentTypeError(f"want DC counts of 3 or more, like 3,6,9, not {text!r}")
    return values


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=sizes, default="3,6,9,12,16",
                   help="numbers of DCs, comma-separated")
    p.add_argument("--bw", default="20mbit")
    p.add_argument("--delay", default="10ms")
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--paced", type=float, default=0.9)
    p.add_argument("--delay-backend", default="auto", choices=[*DELAY_BACKENDS, NoDelay.name])
    p.add_argument("--no-agents", dest="agents", action="store_false",
                   help="skip the agent start measurement")
    p.add_argument("--details", action="store_true", help="print every direction")
    p.add_argument("--json", help="also write the rows to this file")
    args = p.parse_args(argv)
    if args.seconds < 2:
        p.error(f"--seconds must be at least 2 (the window is seconds - 1), not {args.seconds:g}")
    if not 0 < args.paced <= 1:
        p.error(f"--paced is a share of the rate in (0, 1], not {args.paced:g}")
    try:
        specmod.loads(ring_with_chords(3, args.bw, args.delay), source="--bw/--delay")
    except specmod.SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("benchmarks/scale.py builds networks: run it as root.", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale-") as root:
        try:
            for n in args.sizes:
                row = measure_size(n, args, root)
                rows.append(row)
                print(table(rows[-1:]).splitlines()[-1] if len(rows) > 1 else table(rows),
                      flush=True)
                if args.details:
                    print(details(row), flush=True)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
    print()
    print(table(rows))
    met = [r["dcs"] for r in rows if r["meets_goal"]]
    print(f"\nlargest N meeting the goal (goodput within {GOODPUT_TOLERANCE:.0%}, RTT within "
          f"{RTT_TOLERANCE * 1e3:.0f} ms): {max(met) if met else 'none'}"
          f"   (delay backend: {rows[0]['backend'] if rows else '-'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
