"""The Python delay line (relay) against the compiled one (crelay), in one run.

For each, on two data centers joined by one WAN link of 10 ms each way
(testbed.emulation.network.build with that delay backend):

(a) CPU per forwarded frame: the delay line's own CPU time (its stats'
    cpu_s, user + system) over the frames it forwarded in both directions,
    while iperf3 fills the link shaped at 20 and at 50 Mbit/s (the median
    of three loads).  The system
    time includes the receiving side's kernel work that runs in the sender's
    context when a frame is handed to a veth, so it is the cost of the whole
    hop, not of the delay line's own code alone.  Because that work can be
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

Prints one table (rows: implementations; the network without a delay line
is the "no line" column) and the ratio python / compiled of the CPU per
frame.

    sudo .venv/bin/python benchmarks/delay_line.py [--only compiled]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import time

from testbed import spec as specmod
from testbed.emulation import measure, network, shaping

DELAY = 0.010
CPU_RATES = (20e6, 50e6)
STEP_RATES = (50e6, 100e6, 200e6, 400e6, 800e6)
FULL_LOAD_RATE = 100e6
UDP_SHARE = 0.9
PAYLOAD, FRAME = 1472, 1514                  # UDP payload of a full Ethernet frame
MAX_ADDED_DELAY = 0.001
MIN_FORWARDED = 0.99
MIN_SENT = 0.97                              # below: iperf3 itself cannot send that fast
IMPLEMENTATIONS = (("python", "relay"), ("compiled", "crelay"))
BASELINE = "none"
IDLE_FIELDS = (3, 4)                          # idle iowait in /proc/stat
PF_KTHREAD = 0x00200000
REPEATS = 3


def topology():
    return specmod.loads(f"""
name: bench-delay
datacenters: [{{name: east, workers: 1}}, {{name: west, workers: 1}}]
wan: [{{between: [east, west], bw: 50mbit, delay: {DELAY * 1000:g}ms}}]
""")


def counters(net):
    stats = net.backend.stats()[0]
    return stats["cpu_s"], sum(d["frames"] for d in stats["dirs"].values())


def machine_busy():
    """Seconds every CPU of the machine spent busy, counted from an
    arbitrary start: the time of all CPUs less their idle time.  The idle
    time is measured exactly, while /proc/stat's busy fields are sampled on
    the timer tick, which misses most of short bursts of work such as a
    delay line's 1 ms wake-ups."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    idle = sum(int(fields[i]) for i in IDLE_FIELDS) / os.sysconf("SC_CLK_TCK")
    return time.monotonic() * os.cpu_count() - idle


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


def wan_frames(net):
    """Frames the two routers sent into the WAN link, both directions."""
    total = 0
    for src, dst in (("east", "west"), ("west", "east")):
        node, dev, _, _ = net.egress(src, dst)
        total += int(network.run_in(node, ["cat", f"/sys/class/net/{dev}/statistics/tx_packets"]))
    return total


def cpu_per_frame(net, rate, seconds):
    """(seconds of delay-line CPU per frame it forwarded, or None without one;
    seconds of the machine's busy CPU per frame crossing the link) while TCP
    fills the link; each the median of REPEATS loads, as other work on the
    machine comes and goes."""
    net.change_link("east", "west", rate=rate)
    relay = net.backend.uses_relays
    namespaces = run_namespaces(net)
    own, machine = [], []
    for _ in range(REPEATS):
        cpu0, frames0 = counters(net) if relay else (0, 0)
        busy0, others0, wan0 = machine_busy(), others_cpu(namespaces), wan_frames(net)
        measure.iperf3(net, "east-w0", "west-w0", seconds=seconds)
        busy1, others1, wan1 = machine_busy(), others_cpu(namespaces), wan_frames(net)
        cpu1, frames1 = counters(net) if relay else (0, 0)
        if relay:
            own.append((cpu1 - cpu0) / (frames1 - frames0))
        machine.append((busy1 - busy0 - others_used(others0, others1)) / (wan1 - wan0))
    return (statistics.median(own) if relay else None), statistics.median(machine)


class NoDelayLine:
    """The network without a delay line: routers joined directly, each WAN
    direction shaped by HTB over the byte FIFO the delay lines use, no delay."""
    name = BASELINE
    uses_relays = False

    def leaf(self, dev, direction, verb="add"):
        return shaping.fifo_leaf(dev, direction.queue, verb)

    def start(self, net, plan, spec, state):
        pass

    def set(self, wan_plan, key, direction):
        pass

    def stop(self):
        pass


def build(backend):
    if backend != BASELINE:
        return network.build(topology(), delay_backend=backend)
    # network.build offers only backends that emulate the delay; this one
    # leaves it out on purpose, so it is put in place for this one build.
    saved = network.check_buildable, network.make_backend
    network.check_buildable = lambda spec, delay_backend: BASELINE
    network.make_backend = lambda name: NoDelayLine()
    try:
        return network.build(topology())
    finally:
        network.check_buildable, network.make_backend = saved


def udp_with_ping(net, rate, seconds):
    """UDP east -> west at UDP_SHARE of `rate` (on the wire) while ping
    measures the RTT.  Returns (the share of the datagrams due at that rate
    iperf3 sent, the share of those the delay line forwarded, median RTT).
    Forwarded, not received: a receiving iperf3 short of CPU drops datagrams
    the delay line did deliver."""
    net.change_link("east", "west", rate=rate)
    forwarded0 = net.backend.stats()[0]["dirs"]["ab"]["frames"]
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
    forwarded = net.backend.stats()[0]["dirs"]["ab"]["frames"] - forwarded0 - len(rtts)
    forwarded_share = min(forwarded / sent, len(rtts) / count)
    rtt = statistics.median(rtts) if rtts else float("inf")
    return sent / (payload_rate * seconds / (PAYLOAD * 8)), forwarded_share, rtt


def measure_one(backend, seconds):
    row = {"backend": backend, "steps": []}
    with build(backend) as net:
        measure.ping_rtt(net, "east-w0", "west-w0", count=2)
        own, machine = zip(*[cpu_per_frame(net, rate, seconds) for rate in CPU_RATES])
        row["cpu"], row["machine"] = list(own), list(machine)
        if backend == BASELINE:
            return row
        row["held"] = 0.0
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
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=4.0, help="length of each load")
    p.add_argument("--only", choices=[label for label, _ in IMPLEMENTATIONS],
                   help="measure one implementation (and the baseline) only")
    args = p.parse_args()
    rows = {}
    for label, backend in IMPLEMENTATIONS:
        if args.only and label != args.only:
            continue
        rows[label] = measure_one(backend, args.seconds)
        for rate, sent, forwarded, added in rows[label]["steps"]:
            print(f"{label:9} {rate / 1e6:5.0f} Mbit/s link, UDP at {UDP_SHARE:.0%}: sent "
                  f"{sent:.1%} of it, forwarded {forwarded:.1%} of that, added delay "
                  f"{added * 1e3:+.2f} ms", flush=True)
    base = measure_one(BASELINE, args.seconds)["machine"]
    print()
    print(table(rows, base))


def us(seconds):
    return f"{seconds * 1e6:5.1f}"


def table(rows, base):
    at = "/".join(f"{r / 1e6:.0f}" for r in CPU_RATES)
    lines = [f"CPU per frame in us, at {at} Mbit/s; machine = the whole machine's busy time "
             f"per frame crossing the link",
             f"{'delay line':10}  {'CPU/frame':>11}  {'machine':>11}  {'no line':>11}  "
             f"{'added':>11}  max rate held  RTT error @{FULL_LOAD_RATE / 1e6:.0f}M"]
    for label, row in rows.items():
        own = "/".join(us(c) for c in row["cpu"])
        machine = "/".join(us(c) for c in row["machine"])
        baseline = "/".join(us(c) for c in base)
        added = "/".join(us(m - b) for m, b in zip(row["machine"], base))
        held = f"{row['held'] / 1e6:.0f} Mbit/s" if row["held"] else "none"
        if row.get("sender_limited"):
            held = ">=" + held
        lines.append(f"{label:10}  {own:>11}  {machine:>11}  {baseline:>11}  {added:>11}  "
                     f"{held:>13}  {row['full_load_error'] * 1e3:+11.2f} ms")
    if "python" in rows and "compiled" in rows:
        ratios = "  ".join(f"{p / c:.1f}x @{r / 1e6:.0f}M" for p, c, r in
                           zip(rows["python"]["cpu"], rows["compiled"]["cpu"], CPU_RATES))
        lines.append(f"CPU per frame, python / compiled: {ratios}")
    lines.append("(CPU/frame = the delay line process's user + system time, which includes "
                 "the receiving side's kernel work that runs when a frame is handed to a veth; "
                 "the compiled line serves its share of the links from one process per core)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
