"""The transport over real ZeroMQ sockets on loopback; heartbeats on a
loaded machine."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from agents.config import Transport, heartbeat_interval
from agents.transport import Endpoint, PeerDead, RecvTimeout, split
from tests.ports import free_port

# Short enough that a test waiting a few seconds outlasts both, so only
# heartbeats can keep a silent peer alive.
DEAD_AFTER = 1.0
GRACE = 1.0


HOG = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: sum(range(10000))\n"


@pytest.fixture
def loaded():
    """Every core busy with another process, and this process's GIL wanted
    by a thread that computes in Python: how agents run on a busy machine."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(os.cpu_count() or 1)]
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [sum(range(1000)) for _ in iter(stop.is_set, True)])
    spinner.start()
    try:
        yield
    finally:
        stop.set()
        spinner.join()
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.fixture
def pair():
    pa, pb = free_port(), free_port()
    logged = []
    a = Endpoint("a", "127.0.0.1", pa, {"b": ("127.0.0.1", pb)}, chunk_bytes=1000,
                 heartbeat_interval=0.1, dead_after=DEAD_AFTER, first_contact_grace=GRACE)
    b = Endpoint("b", "127.0.0.1", pb, {"a": ("127.0.0.1", pa)}, chunk_bytes=1000,
                 heartbeat_interval=0.1, dead_after=DEAD_AFTER, first_contact_grace=GRACE,
                 log=lambda kind, **f: logged.append((kind, f)))
    yield a, b, logged
    a.close()
    b.close()


def test_split_covers_every_byte_once():
    assert split(2500, 1000) == [(0, 1000), (1000, 1000), (2000, 500)]
    assert split(1000, 1000) == [(0, 1000)]
    assert split(0, 1000) == [(0, 0)]


@pytest.mark.parametrize("shape,dtype", [((1,), np.float32), ((250,), np.float32), ((251,), np.float32),
                                         ((7, 13, 3), np.float64), ((0,), np.float32),
                                         ((100_003,), np.int8), ((33, 1), np.int64)])
def test_tensors_round_trip_bit_exactly_through_chunks(pair, shape, dtype):
    a, b, _ = pair
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 1e6).astype(dtype)
    a.send("b", {"type": "t", "tag": 7}, x)
    m = b.recv(timeout=5)
    assert m.sender == "a" and m.header["type"] == "t" and m.header["tag"] == 7
    assert m.payload.dtype == x.dtype and m.payload.shape == x.shape
    assert m.payload.tobytes() == x.tobytes()
    assert m.header["nchunks"] == len(split(x.nbytes, 1000))


def test_special_floats_survive(pair):
    a, b, _ = pair
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], np.float32)
    a.send("b", {"type": "t"}, x)
    assert b.recv(timeout=5).payload.tobytes() == x.tobytes()


def test_messages_in_a_row_arrive_in_order_and_whole(pair):
    a, b, _ = pair
    xs = [np.arange(n, dtype=np.float32) for n in (10, 3000, 1, 2500)]
    for i, x in enumerate(xs):
        a.send("b", {"type": "t", "i": i}, x)
    got = [b.recv(timeout=5) for _ in xs]
    assert [m.header["i"] for m in got] == [0, 1, 2, 3]
    assert all(np.array_equal(m.payload, x) for m, x in zip(got, xs))


def test_header_only_messages_and_byte_counts(pair):
    a, b, _ = pair
    a.send("b", {"type": "bye"})
    assert b.recv(timeout=5).payload is None
    a.send("b", {"type": "t"}, np.zeros(500, np.float32))
    b.recv(timeout=5)
    assert a.bytes_sent["b"] == 2000 and b.bytes_received["a"] == 2000


def test_large_messages_are_logged_as_passive_goodput_measurements(pair):
    a, b, logged = pair
    a.send("b", {"type": "t"}, np.zeros(100_000, np.float32))
    b.recv(timeout=5)
    xfers = [f for kind, f in logged if kind == "xfer"]
    assert xfers and xfers[0]["peer"] == "a" and xfers[0]["bytes"] == 400_000
    # The clock starts once the first 1000-byte chunk is in: its bytes do not count.
    assert xfers[0]["goodput"] == pytest.approx((400_000 - 1000) * 8 / xfers[0]["seconds"])


def test_heartbeats_keep_a_quiet_peer_alive_past_dead_after_and_grace(pair, loaded):
    a, b, _ = pair
    # a sends no data at all: without its heartbeats b would give up on it
    # after GRACE (never heard from) or DEAD_AFTER (heard from once).
    with pytest.raises(RecvTimeout):
        b.recv(timeout=3 * (GRACE + DEAD_AFTER), watch=["a"])
    assert "a" in b.last_seen


def test_a_peer_never_heard_from_is_dead_after_the_first_contact_grace():
    port = free_port()
    lonely = Endpoint("b", "127.0.0.1", port, {"a": ("127.0.0.1", free_port())},
                      dead_after=DEAD_AFTER, first_contact_grace=GRACE)
    try:
        with pytest.raises(PeerDead, match="peer a has been silent"):
            lonely.recv(timeout=10 * GRACE, watch=["a"])
    finally:
        lonely.close()


def test_the_first_contact_grace_is_a_minute_unless_set():
    ep = Endpoint("b", "127.0.0.1", free_port(), {}, dead_after=DEAD_AFTER)
    try:
        assert ep.first_contact_grace == 60.0
    finally:
        ep.close()


def test_a_dead_peer_is_detected_not_waited_on_forever(pair, loaded):
    a, b, _ = pair
    a.send("b", {"type": "hello"})
    b.recv(timeout=5)
    a.close()
    # PeerDead, not RecvTimeout: noticed long before the receive times out.
    with pytest.raises(PeerDead, match="peer a has been silent"):
        b.recv(timeout=30 * DEAD_AFTER, watch=["a"])
    a.close = lambda: None  # already closed


@pytest.fixture
def queued_pair():
    pa, pb = free_port(), free_port()
    a = Endpoint("a", "127.0.0.1", pa, {"b": ("127.0.0.1", pb)}, chunk_bytes=64 * 1024,
                 queued=True)
    b = Endpoint("b", "127.0.0.1", pb, {"a": ("127.0.0.1", pa)}, chunk_bytes=64 * 1024)
    yield a, b
    a.close()
    b.close()


def test_queued_mode_holds_the_backlog_in_the_application_queue_in_order(queued_pair):
    a, b = queued_pair
    xs = [np.full(1_000_000, i, dtype=np.float32) for i in range(6)]
    for i, x in enumerate(xs):
        a.send("b", {"type": "t", "i": i}, x)
    a.send("b", {"type": "end"})
    # Nothing pumps until the sender polls, so all but the first wait in
    # the application queue, header-only messages behind data too.
    assert a.queue_length("b") >= 6
    a.flush(timeout=20)
    assert a.queue_length("b") == 0
    got = [b.recv(timeout=10) for _ in range(7)]
    assert [m.header.get("i") for m in got] == [0, 1, 2, 3, 4, 5, None]
    assert all(np.array_equal(m.payload, x) for m, x in zip(got, xs))


def test_a_stamped_message_carries_when_it_left_the_queue_and_arrived(queued_pair):
    a, b = queued_pair
    for _ in range(2):
        a.send("b", {"type": "t"}, np.zeros(75_000, np.float32))
    a.send("b", {"type": "t", "stamp": True}, np.zeros(75_000, np.float32))
    assert a.queue_length("b") >= 2            # the stamped one waits behind the second
    time.sleep(0.2)
    before_flush = time.time()
    a.flush(timeout=20)
    got = [b.recv(timeout=10) for _ in range(3)]
    assert all("sent" not in m.header for m in got[:2]) and "stamp" not in got[2].header
    # Stamped when it left the queue (during the flush), not when sent.
    assert before_flush <= got[2].header["sent"] <= got[2].header["arrived"]


def test_a_closing_endpoint_waits_for_its_last_message_to_leave():
    # The peer is not there yet when the sender closes (as a worker whose
    # last model is still crossing a slow link): the message must still go.
    import threading
    pa, pb = free_port(), free_port()
    a = Endpoint("a", "127.0.0.1", pa, {"b": ("127.0.0.1", pb)}, dead_after=1.0)
    a.send("b", {"type": "last"}, np.arange(1000, dtype=np.float32))
    closing = threading.Thread(target=a.close)
    closing.start()
    time.sleep(3.0)                      # longer than the old 2 s linger
    b = Endpoint("b", "127.0.0.1", pb, {"a": ("127.0.0.1", pa)})
    try:
        m = b.recv(timeout=10)
        assert m.header["type"] == "last" and np.array_equal(m.payload, np.arange(1000))
        closing.join(timeout=10)
        assert not closing.is_alive()
    finally:
        b.close()


def test_heartbeats_come_ten_times_within_dead_after_but_not_more_often_than_twice_a_second():
    # Every agent beats to every peer: with a minute's dead_after a beat every
    # 6 s, not every 0.5 s; a peer still beats ten times before it could be
    # taken for dead, and a short dead_after does not make the beats denser.
    assert heartbeat_interval(60.0) == pytest.approx(6.0)
    assert heartbeat_interval(5.0) == pytest.approx(0.5)
    assert heartbeat_interval(1.0) == pytest.approx(0.5)
    # Every agent's transport settings take it from their dead_after, unless set.
    assert Transport(dead_after=60.0).heartbeat_interval == pytest.approx(6.0)
    assert Transport().heartbeat_interval == pytest.approx(0.5)
    assert Transport(dead_after=60.0, heartbeat_interval=0.1).heartbeat_interval == 0.1
    # An endpoint built without those settings derives it the same way.
    for dead_after, beat in ((60.0, 6.0), (5.0, 0.5)):
        ep = Endpoint("a", "127.0.0.1", free_port(), {}, dead_after=dead_after)
        try:
            assert ep.heartbeat_interval == pytest.approx(beat)
        finally:
            ep.close(drain=False)


PEER_THAT_PRINTS = """
import sys
from agents.transport import Endpoint
b = Endpoint("b", "127.0.0.1", int(sys.argv[1]), {"a": ("127.0.0.1", int(sys.argv[2]))},
             chunk_bytes=64 * 1024)
print("ready", flush=True)
while True:
    m = b.recv()
    print(m.header.get("tag"), flush=True)
    if m.header.get("tag") == "end":
        break
b.close()
"""


def wait_stopped(pid, timeout=10.0):
    """Until every thread of `pid` is stopped (a signal reaches each thread
    when it next runs; on a busy machine that can take a while)."""
    import glob
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for path in glob.glob(f"/proc/{pid}/task/*/stat"):
            try:
                states.append(open(path).read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if states and all(st in "Tt" for st in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop within {timeout} s")
