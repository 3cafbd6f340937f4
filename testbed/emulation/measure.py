"""Measurements on the emulated network with real tools: ping and iperf3;
and how much CPU time the hypervisor took meanwhile.

Used by `testbed selftest` and by the tests, which compare them with the
configured link.  TCP goodput is compared with the wire rate times
GOODPUT_SHARE: a full 1514-byte frame carries 1448 bytes of payload (TCP
with timestamps at MTU 1500).
"""

import contextlib
import json
import re
import subprocess
import time

from testbed.emulation.network import NetworkError, run_in
from testbed.records import cpu


def cpu_times():
    """(stolen, total) jiffies of all CPUs since boot, from /proc/stat."""
    fields = cpu.jiffies()[:cpu.STEAL_FIELD + 1]
    return fields[cpu.STEAL_FIELD], sum(fields)


def stolen_share(before, after):
    """The share of CPU time the hypervisor took from this virtual machine
    between two cpu_times() readings.  While it does, nothing here runs:
    not the shapers' dequeue, not the delay line, not TCP.  A flow then
    loses what its shaper could have sent meanwhile (a 50 Mbit/s flow kept
    0.93-0.96 of its rate with a fifth of the CPU stolen, 0.98-1.00 with
    under 1%), so a rate measured then says little about the emulation."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def ping_rtt(net, src, dst, count=10, interval=0.2):
    """Median round-trip time in seconds from host src to host dst.  One
    ping first warms ARP along the path, so it is not counted."""
    node, ip = net.node(src), net.ip(dst)
    run_in(node, ["ping", "-c", "1", "-W", "5", ip], check=False)
    out = run_in(node, ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "5", ip],
                 check=False)
    rtts = sorted(float(m) / 1e3 for m in re.findall(r"time=([\d.]+) ms", out))
    if not rtts:
        raise NetworkError(f"no ping reply from {dst} ({ip}) to {src}")
    return rtts[len(rtts) // 2]


def start_iperf_server(net, host, port=5201):
    node = net.node(host)
    proc = node.popen(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.PIPE,
                      stderr=subprocess.STDOUT)
    # Wait for the listening socket rather than sleeping a guessed time.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        out = run_in(node, ["ss", "-Hltn", f"sport = :{port}"], check=False)
        if out.strip():
            return proc
        time.sleep(0.05)
    proc.kill()
    raise NetworkError(f"iperf3 server on {host} did not start")


def acked_bytes(net, host, port):
    """Bytes the peer has acknowledged on host's busiest TCP connection with
    local port `port` (TCP's own count, from `ss -ti`)."""
    return counters(net, host, port)[0]


def counters(net, host, port):
    """(bytes acked, bytes SACKed above them) of host's busiest connection on `port`."""
    out = run_in(net.node(host), ["ss", "-Htin", "state", "established", f"( sport = :{port} )"],
                 check=False)
    return tcp_counters(out).get(port, (0, 0))


def timed_acked_bytes(net, host, port, settle_until=None):
    """(acked_bytes, the time it was returned, seconds it took to read).

    TCP's acknowledged count is in order: while a lost segment is repaired
    it stands still, then jumps by everything that arrived meanwhile (up to
    a window of data).  A window edge read then miscounts the window by
    that much, so with `settle_until` the count is read again until no
    SACKed data waits above it, or until that time."""
    while True:
        before = time.monotonic()
        acked, sacked = counters(net, host, port)
        after = time.monotonic()
        if not sacked or settle_until is None or after >= settle_until:
            return acked, after, after - before
        time.sleep(0.01)


def tcp_counters(ss_output):
    """{local port: (bytes acked, segments SACKed)} from `ss -Htin state
    established` output, taking the busiest connection of each port
    (iperf3 also holds a control connection on its port).  A connection's
    line carries its addresses; the indented line after it, its counters
    (`sacked` only while something is)."""
    found, port = {}, None
    for line in ss_output.splitlines():
        if line and not line[0].isspace():
            fields = line.split()
            port = int(fields[2].rsplit(":", 1)[1]) if len(fields) >= 4 else None
            continue
        m = re.search(r"bytes_acked:(\d+)", line)
        if m and port is not None and int(m.group(1)) >= found.get(port, (0, 0))[0]:
            sacked = re.search(r"\bsacked:(\d+)", line)
            found[port] = (int(m.group(1)), int(sacked.group(1)) if sacked else 0)
    return found


def acked_by_port(ss_output):
    """{local port: bytes acked} (tcp_counters without the SACKed)."""
    return {port: acked for port, (acked, _) in tcp_counters(ss_output).items()}


def wan_frames(net):
    """Frames the routers have sent into WAN links so far, every direction
    of every link (their egress devices' tx_packets, one read per router)."""
    devices = {}
    for link in net.spec.wan:
        for src, dst in ((link.a, link.b), (link.b, link.a)):
            node, dev, _, _ = net.egress(src, dst)
            devices.setdefault(node, []).append(dev)
    return sum(int(x) for node, devs in devices.items()
               for x in run_in(node, ["cat"] + [f"/sys/class/net/{d}/statistics/tx_packets"
                                                 for d in devs]).split())


# The flow runs this long past the measured window, so that the last count is
# read while it still flows, however long reading it takes (seconds under
# a VM's software emulation).
FLOW_TAIL = 1.0
FLOW_START_TIMEOUT = 10.0   # seconds a flow may take to start carrying data


def iperf3(net, src, dst, seconds=5.0, omit=1.0, interval=1.0, port=5201, started=None):
    """TCP goodput from src to dst, with iperf3 generating the flow.

    The goodput is the growth of TCP's acknowledged-bytes count at the
    sender between the end of the omitted warm-up and the end of the run:
    what the receiver's kernel took in, free of the swings of when the
    receiving application reads its socket.  The client runs on dst in
    reverse mode (-R), so the per-interval numbers are bytes read by the
    receiver.  `started`, if given, is called once the client is launched,
    so a change can be timed from the flow's start rather than from a
    server's start-up.  Returns (goodput bit/s, [bit/s per interval of the
    measured window])."""
    server = start_iperf_server(net, src, port)
    client = net.node(dst).popen(
        ["iperf3", "-c", net.ip(src), "-p", str(port), "-J", "-R",
         "-t", str(seconds + FLOW_TAIL), "-O", str(omit), "-i", str(interval)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started_at = time.monotonic()
    try:
        if started is not None:
            started()
        time.sleep(omit)
        # Each count's time is taken when `ss` has returned it: what it costs
        # to start ss (a large, varying share under a VM's software
        # emulation) falls before the count, not inside the window.
        flow_end = started_at + omit + seconds + FLOW_TAIL
        settle = omit + FLOW_START_TIMEOUT
        b0, t0, read_cost = timed_acked_bytes(net, src, port, started_at + settle)
        # On a slow machine the connection may carry nothing yet after
        # `omit`: the window starts once it does (the flow lasts `omit`
        # longer than the window, so the window still ends inside it).
        while b0 == 0 and t0 - started_at < settle:
            time.sleep(0.1)
            b0, t0, read_cost = timed_acked_bytes(net, src, port, started_at + settle)
        # The window ends early enough that the last count, read as slowly
        # as the first (and waiting for a repair as long as the flow lasts),
        # is read before the flow ends; on the host that is `seconds` less 0.2 s.
        time.sleep(max(0.5, min(seconds - 0.2, flow_end - 2 * read_cost - time.monotonic())))
        b1, t1, _ = timed_acked_bytes(net, src, port, flow_end - 2 * read_cost)
        out, err = client.communicate(timeout=seconds + FLOW_TAIL + 30)
    finally:
        for proc in (client, server):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            if proc.stderr:
                proc.stderr.close()
    try:
        result = json.loads(out)
    except ValueError:
        raise NetworkError(f"iperf3 {src} -> {dst} failed: {err.decode(errors='replace')[-300:]}") from None
    if "error" in result:
        raise NetworkError(f"iperf3 {src} -> {dst}: {result['error']}")
    if b0 == 0 or b1 <= b0:
        raise NetworkError(f"iperf3 {src} -> {dst}: no data flowed while measuring "
                           f"({b0} then {b1} bytes acknowledged)")
    intervals = [i["sum"]["bits_per_second"] for i in result["intervals"]
                 if not i["sum"]["omitted"] and i["sum"]["end"] <= seconds + interval / 2]
    return (b1 - b0) * 8 / (t1 - t0), intervals


@contextlib.contextmanager
def iperf3_flows(net, flows, seconds):
    """Runs iperf3 TCP flows at once, each from src to dst on its own port
    (the client on dst in reverse mode, as in iperf3()), for `seconds`;
    yields while they run, and ends them on leaving.  `flows` is
    [(src, dst, port)]."""
    procs = []
    try:
        for src, _, port in flows:
            procs.append(start_iperf_server(net, src, port))
        for src, dst, port in flows:
            procs.append(net.node(dst).popen(
                ["iperf3", "-c", net.ip(src), "-p", str(port), "-R", "-t", str(seconds)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout:
                proc.stdout.close()


def rx_bytes(net, host, dev):
    """Bytes host's device `dev` has received so far, frames with their
    Ethernet headers, as a shaper counts them."""
    return int(run_in(net.node(host), ["cat", f"/sys/class/net/{dev}/statistics/rx_bytes"]))
