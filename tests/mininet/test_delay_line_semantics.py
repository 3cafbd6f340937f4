"""Both delay lines, the Python reference (relay) and the compiled one
(crelay), deliver what a WAN link configures and answer the same control
protocol: delay, seeded loss, live changes, counters, refusals."""

import contextlib
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from testbed.emulation import measure, network
from testbed.emulation.delay import CompiledRelayDelay, RelayDelay
from tests.mininet.helpers import spec_of

pytestmark = pytest.mark.mininet

BACKENDS = ["relay", "crelay"]
PROGRAMS = {"relay": RelayDelay, "crelay": CompiledRelayDelay}


def two_dcs(delay_ms, forward=""):
    return spec_of(f"""
    datacenters: [{{name: east, workers: 1}}, {{name: west, workers: 1}}]
    wan:
      - between: [east, west]
        bw: 20mbit
        delay: {delay_ms}ms
        {f"forward: {{{forward}}}" if forward else ""}
    """)


def ping(net, src, dst, count, interval, size):
    """(sent, received) of a ping run from src to dst."""
    out = network.run_in(net.node(src), ["ping", "-n", "-q", "-c", str(count), "-i", str(interval),
                                         "-s", str(size), "-W", "2", net.ip(dst)], check=False)
    m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def link_stats(net):
    return net.backend.stats()[0]["dirs"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ping_rtt_is_twice_the_configured_delay_within_2_percent(backend):
    with network.build(two_dcs(20), delay_backend=backend) as net:
        assert net.backend.name == backend
        rtt = measure.ping_rtt(net, "east-w0", "west-w0", count=15, interval=0.05)
        assert abs(rtt - 0.040) <= 0.02 * 0.040, rtt


COUNTER = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind(("0.0.0.0", 9302))
    print("ready", flush=True)
    seqs = []
    s.settimeout(30.0)                              # the sender may be slow to start
    last = int(sys.argv[1]) - 1
    try:
        while True:
            seqs.append(int(s.recv(64)))
            # Over after 1 s of silence, or 0.5 s after the last datagram:
            # far longer than any frame it could have overtaken waits.
            s.settimeout(0.5 if seqs[-1] == last else 1.0)
    except socket.timeout:
        pass
    print(" ".join(map(str, seqs)), flush=True)
""")

STREAM = textwrap.dedent("""
    import socket, sys, time
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    count, gap = int(sys.argv[2]), float(sys.argv[3])
    start = time.monotonic()
    for seq in range(count):
        wait = start + seq * gap - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        s.sendto(str(seq).encode(), (sys.argv[1], 9302))
""")


def stream(net, count, gap, during=None):
    """Send `count` numbered datagrams east -> west, `gap` s apart; call
    `during` once they flow; returns the sequence numbers received, in order."""
    receiver = net.node("west-w0").popen([sys.executable, "-c", COUNTER, str(count)],
                                         stdout=subprocess.PIPE, text=True)
    assert receiver.stdout.readline().strip() == "ready"
    sender = net.node("east-w0").popen([sys.executable, "-c", STREAM, net.ip("west-w0"),
                                        str(count), str(gap)])
    if during:
        time.sleep(count * gap / 2)
        during()
    assert sender.wait(timeout=60) == 0
    out, _ = receiver.communicate(timeout=60)
    return [int(x) for x in out.split()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_seeded_loss_of_5_percent_drops_a_binomial_share_and_counts_each_drop(backend):
    with network.build(two_dcs(5, "loss: 5%"), delay_backend=backend) as net:
        measure.ping_rtt(net, "east-w0", "west-w0", count=1)      # ARP resolved first
        before = link_stats(net)
        got = stream(net, 4000, 0.0005)
        after = link_stats(net)
    lost = 4000 - len(got)
    # Binomial(4000, 0.05): mean 200, standard deviation 13.8; 4 sd either way.
    assert abs(lost - 200) <= 55, lost
    # Only the forward direction drops, and the counter saw every loss (and
    # perhaps a neighbour probe's).
    assert lost <= after["ab"]["dropped"] - before["ab"]["dropped"] <= lost + 2
    assert after["ba"]["dropped"] == before["ba"]["dropped"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_frames_queued_before_a_live_cut_of_the_delay_still_leave_first(backend):
    # 30 ms to 5 ms in mid-stream: the frames behind may not overtake the
    # ones still held for 30 ms.
    with network.build(two_dcs(30), delay_backend=backend) as net:
        measure.ping_rtt(net, "east-w0", "west-w0", count=1)
        got = stream(net, 1000, 0.001, during=lambda: net.change_link("east", "west", both=False,
                                                                       delay=0.005))
    assert len(got) == 1000 and got == sorted(got)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_live_delay_change_through_the_control_socket_takes_effect(backend):
    with network.build(two_dcs(10), delay_backend=backend) as net:
        rtt = measure.ping_rtt(net, "east-w0", "west-w0", count=10, interval=0.05)
        assert abs(rtt - 0.020) <= 0.002, rtt
        reply = net.backend.request(0, {"op": "set", "dir": "ab", "delay": 0.02})
        assert reply["settings"] == {"delay": 0.02, "jitter": 0.0, "loss": 0.0}
        rtt = measure.ping_rtt(net, "east-w0", "west-w0", count=10, interval=0.05)
        # Never early by more than the release clock's 0.5 ms per direction;
        # late by a few ms at most when other work holds the CPU.
        assert 0.029 <= rtt <= 0.035, rtt
        assert link_stats(net)["ab"]["delay"] == 0.02


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_counters_count_every_forwarded_frame_and_byte_per_direction(backend):
    with network.build(two_dcs(2), delay_backend=backend) as net:
        measure.ping_rtt(net, "east-w0", "west-w0", count=1)
        before = link_stats(net)
        sent, received = ping(net, "east-w0", "west-w0", count=40, interval=0.01, size=1000)
        time.sleep(0.1)
        after = link_stats(net)
    assert sent == received == 40
    frame = 14 + 20 + 8 + 1000              # Ethernet, IPv4, ICMP, payload
    for key in ("ab", "ba"):
        frames = after[key]["frames"] - before[key]["frames"]
        extra = (after[key]["bytes"] - before[key]["bytes"]) - 40 * frame
        # A neighbour probe (a 42-byte ARP frame) may cross as well.
        assert 40 <= frames <= 42 and extra == (frames - 40) * 42, (key, frames, extra)
        assert after[key]["dropped"] == before[key]["dropped"] and after[key]["queued"] == 0


# ---- the control protocol, on a delay line between a veth pair of its own

@contextlib.contextmanager
def lone_line(backend):
    """A delay line in a fresh network namespace (gone with the process),
    between the two ends of a veth pair: (its control socket path, its process)."""
    if backend == "crelay" and not os.access(CompiledRelayDelay().command()[0], os.X_OK):
        pytest.fail("the compiled delay line is not built: run scripts/install.sh")
    folder = tempfile.mkdtemp(prefix="delayline-")
    sock = os.path.join(folder, "control.sock")
    argv = PROGRAMS[backend]().command() + [
        "--a", "va", "--b", "vb", "--control", sock, "--seed", "7", "--ab-delay", "0.01",
        "--ba-loss", "0.5"]
    # No IPv6 on the pair: its neighbour discovery would put frames through
    # the line that the counters below do not expect.
    script = ("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 "
              "&& ip link add va type veth peer name vb && ip link set va up && ip link set vb up "
              "&& exec \"$@\"")
    proc = subprocess.Popen(["unshare", "-n", "sh", "-c", script, "sh", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        assert json.loads(line) == {"ready": True, "pid": proc.pid}, proc.stderr.read()
        yield sock, proc
    finally:
        # Killed, not terminated: the Python line takes up to a second to
        # notice a SIGTERM, and a clean exit is the SIGTERM test's to check.
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
        if os.path.exists(sock):
            os.unlink(sock)
        os.rmdir(folder)


@pytest.fixture(params=BACKENDS)
def lone_delay_line(request):
    with lone_line(request.param) as line:
        yield line


def ask(sock, text):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(sock)
    s.sendall(text.encode() + b"\n")
    reply = s.makefile("rb").readline()
    s.close()
    return json.loads(reply)


def test_stats_reply_has_the_settings_and_counters_of_both_directions(lone_delay_line):
    sock, proc = lone_delay_line
    reply = ask(sock, '{"op": "stats"}')
    assert reply["ok"] is True and reply["pid"] == proc.pid and reply["cpu_s"] >= 0
    assert reply["dirs"] == {
        "ab": {"delay": 0.01, "jitter": 0.0, "loss": 0.0, "frames": 0, "bytes": 0, "dropped": 0,
               "queued": 0},
        "ba": {"delay": 0.0, "jitter": 0.0, "loss": 0.5, "frames": 0, "bytes": 0, "dropped": 0,
               "queued": 0}}


def test_set_changes_one_direction_and_answers_its_settings(lone_delay_line):
    sock, _ = lone_delay_line
    reply = ask(sock, '{"op": "set", "dir": "ba", "delay": 0.25, "jitter": 0.002, "loss": 0.1}')
    assert reply == {"ok": True, "settings": {"delay": 0.25, "jitter": 0.002, "loss": 0.1}}
    dirs = ask(sock, '{"op": "stats"}')["dirs"]
    assert (dirs["ba"]["delay"], dirs["ab"]["delay"]) == (0.25, 0.01)


@pytest.mark.parametrize("request_line", [
    '{"op": "set", "dir": "ab", "loss": 1.5}',
    '{"op": "set", "dir": "ab", "delay": -1}',
    '{"op": "set", "dir": "xy", "delay": 0.1}',
    '{"op": "reboot"}',
    '{"op": "stats"',
    'stats',
])
def test_a_bad_request_is_refused_with_an_error_and_changes_nothing(lone_delay_line, request_line):
    sock, proc = lone_delay_line
    reply = ask(sock, request_line)
    assert reply["ok"] is False and isinstance(reply["error"], str) and reply["error"], reply
    assert ask(sock, '{"op": "stats"}')["dirs"]["ab"]["loss"] == 0.0
    assert ask(sock, '{"op": "stats"}')["dirs"]["ab"]["delay"] == 0.01
    assert proc.poll() is None


def test_sigterm_ends_the_delay_line_cleanly_and_removes_its_socket(lone_delay_line):
    sock, proc = lone_delay_line
    proc.terminate()
    assert proc.wait(timeout=5) == 0
    assert not os.path.exists(sock)


def test_the_compiled_delay_line_refuses_a_bad_option_with_exit_2():
    program = CompiledRelayDelay().command()[0]
    r = subprocess.run([program, "--a", "x", "--b", "y", "--control", "/tmp/no.sock",
                        "--ab-loss", "2"], capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "--ab-loss" in r.stderr and "Traceback" not in r.stderr
    assert not os.path.exists("/tmp/no.sock")
    r = subprocess.run([program, "--b", "y"], capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "required" in r.stderr


def test_a_client_that_trickles_its_request_holds_the_line_up_a_quarter_second_at_most(lone_delay_line):
    sock, proc = lone_delay_line
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.settimeout(0.1)
    started, reply = time.monotonic(), b""
    try:
        # A byte every 0.1 s for 3 s: each read gets one, but the request never ends.
        for byte in b'{"op": "stats", "padding": "xxxxxxxxxxxxxxxx"}'[:30]:
            try:
                s.sendall(bytes([byte]))
            except OSError:
                break                     # the line closed the connection
            try:
                reply += s.recv(4096)
            except socket.timeout:
                continue
            if reply.endswith(b"\n") or not reply:
                break
        answered = time.monotonic() - started
    finally:
        s.close()
    assert json.loads(reply) == {"ok": False, "error": "the request did not arrive whole within 0.25s"}
    assert answered < 1.0, answered       # not when the client gave up, 3 s on
    assert ask(sock, '{"op": "stats"}')["ok"] and proc.poll() is None


# ---- fuzzing both control parsers, against the real programs

def exchange(sock, data):
    """Send raw bytes as one client does and end its side; the reply bytes."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return b"".join(chunks) if "chunks" in locals() else b""
    finally:
        s.close()


def settings_of(sock):
    return {k: {knob: d[knob] for knob in ("delay", "jitter", "loss")}
            for k, d in ask(sock, '{"op": "stats"}')["dirs"].items()}


def valid(settings):
    return all(math.isfinite(v) and v >= 0 for d in settings.values() for v in d.values()) and \
        all(d["loss"] <= 1 for d in settings.values())


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10 ** 30),
                    st.sampled_from(["0x10", "1e400", "-0", "01", ".5", "5.", "1e", "true", "null",
                                     "NaN", "Infinity", "-Infinity", "0.25", "1", "2"]))
VALUES = st.one_of(NUMBERS.map(lambda v: v if isinstance(v, str) else json.dumps(v)),
                   st.text(max_size=8).map(json.dumps), st.just("{}"), st.just("[1]"))
KEYS = st.sampled_from(["op", "dir", "delay", "jitter", "loss", "x", "op"])
OPS = st.sampled_from(['"set"', '"stats"', '"reboot"', "1", '"set"'])
DIRS = st.sampled_from(['"ab"', '"ba"', '"xy"', "1", '"ab"'])


@st.composite
def requests(draw):
    """Request lines near the protocol: its keys with odd values, given twice or left out."""
    items = [("op", draw(OPS))]
    if draw(st.booleans()):
        items.append(("dir", draw(DIRS)))
    items += draw(st.lists(st.tuples(KEYS, VALUES), max_size=4))
    order = draw(st.permutations(items))
    return ("{" + ", ".join(f'"{k}": {v}' for k, v in order) + "}").encode() + b"\n"


@pytest.fixture(scope="module")
def both_lines():
    with lone_line("relay") as relay, lone_line("crelay") as crelay:
        yield {"relay": relay, "crelay": crelay}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=requests())
# Escapes the compiled line's strings do not take, and strings past its buffers.
@example(line=b'{"op": "stats", "dir": "\\u001f"}\n')
@example(line=b'{"op": "stats", "dir": "\\b"}\n')
@example(line=b'{"op": "stats", "x": "' + b"y" * 64 + b'"}\n')
@example(line=b'{"op": "stats", "' + b"k" * 32 + b'": 1}\n')
def test_both_parsers_agree_on_every_request_near_the_protocol(both_lines, line):
    outcome = {}
    for name, (sock, proc) in both_lines.items():
        for reset in ('{"op": "set", "dir": "ab", "delay": 0.01, "jitter": 0, "loss": 0}',
                      '{"op": "set", "dir": "ba", "delay": 0, "jitter": 0, "loss": 0.5}'):
            assert ask(sock, reset)["ok"]
        reply = exchange(sock, line)
        assert reply.endswith(b"\n") and reply.count(b"\n") == 1, (name, line, reply)
        answer = json.loads(reply)
        assert answer["ok"] in (True, False) and proc.poll() is None, (name, line, answer)
        outcome[name] = (answer["ok"], settings_of(sock))
        assert valid(outcome[name][1]), (name, line, outcome[name])
    assert outcome["relay"] == outcome["crelay"], line


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=300), st.binary(min_size=4000, max_size=9000),
                      requests().map(lambda r: r[:-1]),
                      st.tuples(requests(), st.binary(max_size=50)).map(lambda t: t[0] + t[1])))
def test_any_bytes_get_one_json_line_and_leave_the_line_forwarding_with_valid_settings(both_lines, data):
    for name, (sock, proc) in both_lines.items():
        reply = exchange(sock, data)
        assert reply.endswith(b"\n") and reply.count(b"\n") == 1, (name, data, reply)
        assert json.loads(reply)["ok"] in (True, False), (name, data, reply)
        assert proc.poll() is None and valid(settings_of(sock)), (name, data)
