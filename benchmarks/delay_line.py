"""The Python delay line (relay) against the compiled one (crelay), in one run.

For each, on two data centers joined by one WAN link of 10 ms each way
(testbed.emulation.network.build with that delay backend):

(a) CPU per forwarded frame: the delay line's own CPU time (its stats'
    cpu_s, user + system) over the frames it forwarded in both directions,
    while iperf3 fills the link shaped at 20 and at 50 Mbit/s (the median
    of three loads, the networks of every row built in turn, so that the
    machine's drift falls on all of them alike).  The system time includes
    the receiving side's kernel work that runs in the sender's context when
    a frame is handed to a veth, so it is the cost of the whole hop, not of
    the delay line's own code alone.  Because that work can be
    moved rather than saved, the whole machine's busy CPU time (/proc/stat)
    per frame crossing the WAN link is measured too, and once more on the
    same network without a delay line (routers joined directly, HTB and the
    byte FIFO only, no delay): the difference is what the delay line adds
    to the machine.  The CPU time of processes outside the run is taken
    off the machine's; kernel work done for them in softirq or kernel
    threads still counts, so the machine columns are only as good as the
    machine is quiet.
(b) The highest rate one direction holds: the link's HTB rate steps up (50,
    100, 200, 400, 800 Mbit/s) with UDP at 90% of it, so the bottleneck queue
    stays empty and what ping sees on top of the configured 2 x 10 ms is the
    delay line's own lag.  A step is held when the added delay is within
    1 ms and the delay line forwards at least 99% of the datagrams sent;
    where iperf3 cannot send 97% of the load, the limit is the sender's and
    the rate held is shown as a lower bound (>=).
(c) The RTT error under full load: ping RTT minus 2 x 10 ms during the UDP
    load at 100 Mbit/s.
(d) Where the compiled line's cost goes.  The "kernel hop" row is the
    same middle namespace with the kernel passing each frame across (tc
    mirred), no delay and no process: the price of the hop itself.  Then
    the compiled line's release clock is priced: the same UDP load on a
    20 Mbit/s link with the clock's grid at 1 ms and at 2 ms; the machine's busy time falls
    with the wake-ups, and the slope is what one wake-up costs (on a virtual
    machine a wake-up from idle goes through the hypervisor's timer and
    halt exits: about 11 microseconds on the two-core VM here).  That is the clock's share of the
    cost per frame; the rest is the frames' own (two copies, one more veth
    hop).

Where the kernel has sch_netem (the VM, docs/vm.md), netem is a third
row: it has no process, so only its machine columns count, and (b) reads
the frames it let through from the sending router's egress.

Prints one table (rows: implementations; the network without a delay line
is the "no line" column) and the ratios python / compiled of the CPU per
frame and compiled / netem of the machine's time per frame.  The
rates are options, for a slow machine (a VM under TCG).

    sudo .venv/bin/python benchmarks/delay_line.py [--only compiled,netem]
        [--cpu-rates 20,50] [--step-rates 50,100,200,400,800] [--full-load 100]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import time

from testbed import spec as specmod
from testbed.emulation import capability, measure, network
from testbed.emulation.delay import CompiledRelayDelay, NoDelay
from testbed.records.cpu import busy_seconds

DELAY = 0.010
CPU_RATES = (20e6, 50e6)
STEP_RATES = (50e6, 100e6, 200e6, 400e6, 800e6)
FULL_LOAD_RATE = 100e6
UDP_SHARE = 0.9
PAYLOAD, FRAME = 1472, 1514                  # UDP payload of a full Ethernet frame
MAX_ADDED_DELAY = 0.001
MIN_FORWARDED = 0.99
MIN_SENT = 0.97                              # below: iperf3 itself cannot send that fast
IMPLEMENTATIONS = (("python", "relay"), ("compiled", "crelay"), ("netem", "netem"))
BASELINE = "none"
HOP = "kernel hop"
TICKS = (0.001, 0.002)                        # the compiled line's clock, and a coarser one
PF_KTHREAD = 0x00200000
REPEATS = 3


def topology():
    return specmod.loads(f"""
name: bench-delay
datacenters: [{{name: east, workers: 1}}, {{name: west, workers: 1}}]
wan: [{{between: [east, west], bw: 50mbit, delay: {DELAY * 1000:g}ms}}]
""")


def counters(net):
    """The delay line's (CPU seconds, frames forwarded, wake-ups; the
    Python line counts none)."""
    stats = net.backend.stats()[0]
    return (stats["cpu_s"], sum(d["frames"] for d in stats["dirs"].values()),
            stats.get("wakeups", 0))


def others_cpu(run_namespaces):
    """{pid: (seconds of CPU, parent pid)} of the processes outside the run
    (outside its namespaces; not this process, not kernel threads), the
    CPU of the children they have reaped included."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            netns = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            continue
        kernel_thread = int(fields[6]) & PF_KTHREAD
        if kernel_thread or netns in run_namespaces or int(pid) == os.getpid():
            continue
        cpu = sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime .. cstime
        found[int(pid)] = (cpu, int(fields[1]))
    return found


def others_used(before, after):
    """Seconds of CPU the processes outside the run used between two
    snapshots.  A process gone by `after` is in the reaped children of its
    nearest ancestor still there, with its whole life, so what it had used
    by `before` comes off that ancestor's growth."""
    used = sum(after[p][0] - before[p][0] for p in after.keys() & before.keys())
    used += sum(after[p][0] for p in after.keys() - before.keys())
    for pid in before.keys() - after.keys():
        ancestor = before[pid][1]
        while ancestor in before and ancestor not in after:
            ancestor = before[ancestor][1]
        if ancestor in after:
            used -= before[pid][0]
    return used


def run_namespaces(net):
    return {os.stat(f"/proc/{node.pid}/ns/net").st_ino
            for node in net.net.hosts + net.net.switches}


def cpu_per_frame(net, rate, seconds):
    """(seconds of delay-line CPU per frame it forwarded, or None without one;
    seconds of the machine's busy CPU per frame crossing the link; the delay
    line's wake-ups per frame, or None) over one TCP load filling the link."""
    net.change_link("east", "west", rate=rate)
    relay = bool(net.backend.stats())
    namespaces = run_namespaces(net)
    cpu0, frames0, wake0 = counters(net) if relay else (0, 0, 0)
    busy0, others0, wan0 = busy_seconds(), others_cpu(namespaces), measure.wan_frames(net)
    measure.iperf3(net, "east-w0", "west-w0", seconds=seconds)
    busy1, others1, wan1 = busy_seconds(), others_cpu(namespaces), measure.wan_frames(net)
    cpu1, frames1, wake1 = counters(net) if relay else (0, 0, 0)
    machine = (busy1 - busy0 - others_used(others0, others1)) / (wan1 - wan0)
    if not relay:
        return None, machine, None
    return (cpu1 - cpu0) / (frames1 - frames0), machine, (wake1 - wake0) / (frames1 - frames0)


def cpu_rounds(backends, seconds):
    """{backend: {"cpu", "machine", "wakeups": [median per CPU rate]}}: each
    backend's network built in turn, REPEATS rounds, one load per rate in
    each, so that the machine's drift (other work comes and goes) falls on
    every backend alike rather than on whichever ran last."""
    samples = {backend: [] for backend in backends}
    for _ in range(REPEATS):
        for backend in backends:
            with build(backend) as net:
                measure.ping_rtt(net, "east-w0", "west-w0", count=2)
                samples[backend].append([cpu_per_frame(net, rate, seconds) for rate in CPU_RATES])
    rows = {}
    for backend, runs in samples.items():
        rows[backend] = {key: [None if runs[0][i][k] is None else
                               statistics.median(run[i][k] for run in runs)
                               for i in range(len(CPU_RATES))]
                         for k, key in enumerate(("cpu", "machine", "wakeups"))}
    return rows


class KernelHop(NoDelay):
    """The delay lines' middle namespace with the kernel forwarding each
    frame from one side to the other (tc mirred at ingress), no delay and
    no process: what the extra hop itself costs, whatever delays it."""
    name = "kernel hop"
    uses_relays = True

    def start(self, net, plan, spec, state):
        for w in plan.wan:
            for src, dst in ((w.relay_a, w.relay_b), (w.relay_b, w.relay_a)):
                network.run_in(net[w.relay], ["tc", "qdisc", "add", "dev", src, "clsact"])
                network.run_in(net[w.relay], [
                    "tc", "filter", "add", "dev", src, "ingress", "u32", "match", "u32", "0", "0",
                    "action", "mirred", "egress", "redirect", "dev", dst])


def build(backend, tick=None):
    """The benchmark's network with the delay line named (a tick only for
    the compiled one), without one (BASELINE), or with the kernel hop."""
    objects = {BASELINE: NoDelay, HOP: KernelHop}
    if backend in objects:
        return network.build(topology(), backend=objects[backend]())
    if tick is not None:
        return network.build(topology(), backend=CompiledRelayDelay(tick=tick))
    return network.build(topology(), delay_backend=backend)


def clock_price(rate, seconds):
    """The compiled delay line's release clock, priced: the same UDP load
    (UDP_SHARE of `rate`, so the same frames per second whatever the clock)
    with the clock's grid at TICKS[0] and at TICKS[1], the two builds taken
    in turn REPEATS times so that the machine's drift falls on both.  The
    machine's busy time per second falls with the wake-ups per second; the
    slope is what one wake-up costs the machine.  Returns {tick: (busy/s,
    wake-ups/s, frames/s, delay-line CPU/s)}, medians, and the cost of one
    wake-up in seconds."""
    samples = {tick: [] for tick in TICKS}
    for _ in range(REPEATS):
        for tick in TICKS:
            with build("crelay", tick=tick) as net:
                measure.ping_rtt(net, "east-w0", "west-w0", count=2)
                before, t0 = snapshot(net), time.monotonic()
                udp_with_ping(net, rate, seconds)
                after, elapsed = snapshot(net), time.monotonic() - t0
            grown = [(x - y) / elapsed for x, y in zip(after[:4], before[:4])]
            grown[0] -= others_used(before[4], after[4]) / elapsed
            samples[tick].append(grown)
    rows = {tick: tuple(statistics.median(s[k] for s in runs) for k in range(4))
            for tick, runs in samples.items()}
    (b0, w0, _, _), (b1, w1, _, _) = rows[TICKS[0]], rows[TICKS[1]]
    return rows, (b0 - b1) / (w0 - w1)


def snapshot(net):
    """(machine busy s, wake-ups, frames forwarded, delay-line CPU s, the
    CPU of processes outside the run), counted from arbitrary starts."""
    cpu, frames, wakeups = counters(net)
    return busy_seconds(), wakeups, frames, cpu, others_cpu(run_namespaces(net))


def udp_with_ping(net, rate, seconds):
    """UDP east -> west at UDP_SHARE of `rate` (on the wire) while ping
    measures the RTT.  Returns (the share of the datagrams due at that rate
    iperf3 sent, the share of those the delay line forwarded, median RTT).
    Forwarded, not received: a receiving iperf3 short of CPU drops datagrams
    the delay line did deliver."""
    net.change_link("east", "west", rate=rate)
    forwarded0 = forwarded_east_west(net)
    server = measure.start_iperf_server(net, "west-w0")
    payload_rate = rate * UDP_SHARE * PAYLOAD / FRAME
    client = net.node("east-w0").popen(
        ["iperf3", "-c", net.ip("west-w0"), "-u", "-b", str(int(payload_rate)), "-l", str(PAYLOAD),
         "-t", str(seconds), "-J"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)                                # the flow is under way
        count = int((seconds - 1.5) / 0.02)
        out = network.run_in(net.node("east-w0"), ["ping", "-n", "-c", str(count), "-i", "0.02",
                                                   "-W", "2", net.ip("west-w0")], check=False)
        result, _ = client.communicate(timeout=seconds + 30)
    finally:
        for proc in (client, server):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    rtts = sorted(float(m) / 1e3 for m in re.findall(r"time=([\d.]+) ms", out))
    sent = json.loads(result)["end"]["sum"]["packets"]
    # The pings crossed too; a lost ping counts as a datagram not forwarded.
    forwarded = forwarded_east_west(net) - forwarded0 - len(rtts)
    forwarded_share = min(forwarded / sent, len(rtts) / count)
    rtt = statistics.median(rtts) if rtts else float("inf")
    return sent / (payload_rate * seconds / (PAYLOAD * 8)), forwarded_share, rtt


def forwarded_east_west(net):
    """Frames the delay line let through east -> west so far: the delay
    line's own count, or for netem (no process) what the sending router's
    egress sent, which netem's leaf hands on only after the delay."""
    if net.backend.uses_relays:
        return net.backend.stats()[0]["dirs"]["ab"]["frames"]
    node, dev, _, _ = net.egress("east", "west")
    return int(network.run_in(node, ["cat", f"/sys/class/net/{dev}/statistics/tx_packets"]))


def rate_steps(backend, seconds):
    """(b) and (c) for one delay line: {"steps", "held", "full_load_error",
    "sender_limited"}."""
    row = {"steps": [], "held": 0.0}
    with build(backend) as net:
        measure.ping_rtt(net, "east-w0", "west-w0", count=2)
        for rate in STEP_RATES:
            sent, forwarded, rtt = udp_with_ping(net, rate, seconds)
            added = rtt - 2 * DELAY
            row["steps"].append((rate, sent, forwarded, added))
            if rate == FULL_LOAD_RATE:
                row["full_load_error"] = added
            kept_up = forwarded >= MIN_FORWARDED and abs(added) <= MAX_ADDED_DELAY
            if kept_up and sent < MIN_SENT:
                row["sender_limited"] = True  # the sender, not the delay line, gave out
                break
            if kept_up:
                row["held"] = rate
            elif rate >= FULL_LOAD_RATE:
                break
    row.setdefault("full_load_error", float("nan"))
    return row


def main():
    global CPU_RATES, STEP_RATES, FULL_LOAD_RATE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=4.0, help="length of each load")
    p.add_argument("--only", help="comma-separated implementations to measure (and the "
                                  f"baseline): {', '.join(label for label, _ in IMPLEMENTATIONS)}")
    p.add_argument("--cpu-rates", default=mbits(CPU_RATES), help="Mbit/s of the CPU loads (a)")
    p.add_argument("--step-rates", default=mbits(STEP_RATES), help="Mbit/s of the steps (b)")
    p.add_argument("--full-load", type=float, default=FULL_LOAD_RATE / 1e6,
                   help="Mbit/s of the step whose RTT error is (c)")
    args = p.parse_args()
    if args.seconds < 1:
        p.error(f"--seconds must be at least 1 (each load omits its first second), not {args.seconds:g}")
    labels = dict(IMPLEMENTATIONS)
    only = args.only.split(",") if args.only else list(labels)
    if not set(only) <= set(labels):
        p.error(f"--only takes {', '.join(labels)}, not {args.only}")
    try:
        rates = [parse_mbits(args.cpu_rates), parse_mbits(args.step_rates)]
    except ValueError as e:
        p.error(str(e))
    CPU_RATES, STEP_RATES, FULL_LOAD_RATE = rates[0], rates[1], args.full_load * 1e6
    if FULL_LOAD_RATE not in STEP_RATES:
        p.error(f"--full-load {args.full_load:g} is not one of the --step-rates")
    has_netem = capability.qdisc_available("netem")
    if "netem" in only and not has_netem:
        print("netem: this kernel has no sch_netem, so it is left out", flush=True)
    chosen = [(label, labels[label]) for label in only if label != "netem" or has_netem]
    cpu = cpu_rounds([backend for _, backend in chosen] + [HOP, BASELINE], args.seconds)
    rows = {}
    for label, backend in chosen:
        rows[label] = dict(cpu[backend], **rate_steps(backend, args.seconds))
        for rate, sent, forwarded, added in rows[label]["steps"]:
            print(f"{label:9} {rate / 1e6:5.0f} Mbit/s link, UDP at {UDP_SHARE:.0%}: sent "
                  f"{sent:.1%} of it, forwarded {forwarded:.1%} of that, added delay "
                  f"{added * 1e3:+.2f} ms", flush=True)
    base, hop = cpu[BASELINE]["machine"], cpu[HOP]["machine"]
    clock = clock_price(CPU_RATES[0], args.seconds) if "compiled" in rows else None
    print()
    print(table(rows, base, hop))
    if clock:
        print()
        print(clock_table(*clock, added=rows["compiled"]["machine"][0] - base[0],
                          wakeups_per_frame=rows["compiled"]["wakeups"][0]))


def mbits(rates):
    return ",".join(f"{r / 1e6:g}" for r in rates)


def parse_mbits(text):
    """(bit/s, ...) from "20,50" (Mbit/s); ValueError in a sentence."""
    try:
        rates = tuple(float(x) * 1e6 for x in text.split(","))
    except ValueError:
        raise ValueError(f"rates are Mbit/s separated by commas, like 20,50, not {text!r}") from None
    if not rates or min(rates) <= 0:
        raise ValueError(f"rates must be above zero, not {text!r}")
    return rates


def us(seconds):
    return "    -" if seconds is None else f"{seconds * 1e6:5.1f}"


def table(rows, base, hop):
    at = "/".join(f"{r / 1e6:g}" for r in CPU_RATES)
    lines = [f"CPU per frame in us, at {at} Mbit/s; machine = the whole machine's busy time "
             f"per frame crossing the link",
             f"{'delay line':10}  {'CPU/frame':>11}  {'machine':>11}  {'no line':>11}  "
             f"{'added':>11}  max rate held  RTT error @{FULL_LOAD_RATE / 1e6:g}M"]
    for label, row in rows.items():
        own = "/".join(us(c) for c in row["cpu"])
        machine = "/".join(us(c) for c in row["machine"])
        baseline = "/".join(us(c) for c in base)
        added = "/".join(us(m - b) for m, b in zip(row["machine"], base))
        held = f"{row['held'] / 1e6:g} Mbit/s" if row["held"] else "none"
        if row.get("sender_limited"):
            held = ">=" + held
        lines.append(f"{label:10}  {own:>11}  {machine:>11}  {baseline:>11}  {added:>11}  "
                     f"{held:>13}  {row['full_load_error'] * 1e3:+11.2f} ms")
    lines.append(f"{HOP:10}  {'-':>11}  {'/'.join(us(c) for c in hop):>11}  "
                 f"{'/'.join(us(c) for c in base):>11}  "
                 f"{'/'.join(us(m - b) for m, b in zip(hop, base)):>11}  (no delay, no process)")
    if "python" in rows and "compiled" in rows:
        ratios = "  ".join(f"{p / c:.1f}x @{r / 1e6:.0f}M" for p, c, r in
                           zip(rows["python"]["cpu"], rows["compiled"]["cpu"], CPU_RATES))
        lines.append(f"CPU per frame, python / compiled: {ratios}")
    if "compiled" in rows and "netem" in rows:
        # The whole machine's time per frame, not what each adds: netem's
        # addition can be smaller than the machine's noise.
        ratios = "  ".join(f"{c / n:.2f}x @{r / 1e6:g}M" for c, n, r in
                           zip(rows["compiled"]["machine"], rows["netem"]["machine"], CPU_RATES))
        lines.append(f"machine time per frame, compiled / netem: {ratios}")
    lines.append("(CPU/frame = the delay line process's user + system time, which includes "
                 "the receiving side's kernel work that runs when a frame is handed to a veth; "
                 "the compiled line serves its share of the links from one process per core)")
    return "\n".join(lines)


def clock_table(rows, wakeup, added, wakeups_per_frame):
    """What the compiled line's release clock costs per frame under the
    table's TCP load at the first CPU rate (its wake-ups per frame there),
    against what the line adds in all (`added`, from the table)."""
    lines = [f"The compiled line's release clock, one link at {CPU_RATES[0] / 1e6:.0f} Mbit/s carrying "
             f"UDP at {UDP_SHARE:.0%} of it:"]
    for tick, (busy, wakeups, frames, cpu) in rows.items():
        lines.append(f"  grid {tick * 1e3:.0f} ms: {wakeups:6.0f} wake-ups/s, {frames:6.0f} frames/s, "
                     f"machine {busy:.1%} busy, delay line {cpu:.1%} of a core")
    clock = wakeup * wakeups_per_frame
    lines.append(f"  one wake-up costs the machine {us(wakeup).strip()} us; under TCP at "
                 f"{CPU_RATES[0] / 1e6:.0f} Mbit/s ({wakeups_per_frame:.2f} wake-ups per frame) that is "
                 f"{us(clock).strip()} us of the {us(added).strip()} us per frame the line adds, "
                 f"leaving {us(added - clock).strip()} us per frame for the frames themselves")
    lines.append(f"  (a release within {TICKS[0] * 500:.1f} ms of each deadline needs a wake-up per "
                 f"{TICKS[0] * 1e3:.0f} ms while frames are held, whatever the implementation)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
