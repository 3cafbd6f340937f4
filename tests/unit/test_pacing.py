"""Pacing: the token bucket with hand-checked numbers, then an Endpoint
that paces one peer over real ZeroMQ sockets on loopback."""

import sys
import threading

import numpy as np
import pytest

from agents.transport.pacing import TokenBucket
from agents.transport import Endpoint, RecvTimeout
from tests.ports import free_port
from tests.stalls import judge, measured

MB = 1_000_000


def test_8_mbit_s_with_1_mb_chunks_releases_one_chunk_a_second():
    b = TokenBucket(8e6, burst=MB, now=0.0)       # 8 Mbit/s = 1 MB/s
    assert b.delay(MB, 0.0) == 0.0                # starts full: the first chunk goes at once
    b.take(MB, 0.0)
    assert b.delay(MB, 0.0) == pytest.approx(1.0)
    assert b.delay(MB, 0.25) == pytest.approx(0.75)
    b.take(MB, 1.0)
    assert b.delay(MB, 1.0) == pytest.approx(1.0)
    assert b.delay(MB, 2.0) == 0.0


def test_a_rate_change_mid_stream_repays_the_rest_at_the_new_rate_at_once():
    faster = TokenBucket(8e6, burst=MB, now=0.0)
    faster.take(MB, 0.0)
    # Half a second at 1 MB/s earned 0.5 MB; the other 0.5 MB at 2 MB/s takes 0.25 s.
    faster.set_rate(16e6, 0.5)
    assert faster.delay(MB, 0.5) == pytest.approx(0.25)
    slower = TokenBucket(8e6, burst=MB, now=0.0)
    slower.take(MB, 0.0)
    slower.set_rate(4e6, 0.5)                     # 0.5 MB at 0.5 MB/s: 1 s
    assert slower.delay(MB, 0.5) == pytest.approx(1.0)


def test_idle_time_refills_at_most_one_burst_even_across_a_rate_change():
    b = TokenBucket(8e6, burst=MB, now=0.0)
    b.take(MB, 0.0)
    # 100 s idle would be 100 MB of tokens; only one burst is kept.
    assert b.delay(MB, 100.0) == 0.0
    b.take(MB, 100.0)
    assert b.delay(MB, 100.0) == pytest.approx(1.0)
    # Idle again, then ten times the rate: still one chunk at once, then 0.1 s apart.
    b.set_rate(80e6, 200.0)
    b.take(MB, 200.0)
    assert b.delay(MB, 200.0) == pytest.approx(0.1)


def test_a_chunk_larger_than_the_burst_goes_from_a_full_bucket_and_its_debt_is_repaid():
    b = TokenBucket(8e6, burst=MB / 2, now=0.0)
    assert b.delay(MB, 0.0) == 0.0                # a full bucket lets it go ...
    b.take(MB, 0.0)                               # ... leaving 0.5 MB of debt
    assert b.delay(MB, 0.0) == pytest.approx(1.0)  # debt plus a burst, at 1 MB/s
    assert b.delay(MB / 4, 0.0) == pytest.approx(0.75)


def test_chunks_smaller_than_the_burst_go_together_until_it_is_spent():
    b = TokenBucket(8e6, burst=MB, now=0.0)
    for _ in range(4):
        assert b.delay(MB / 4, 0.0) == 0.0
        b.take(MB / 4, 0.0)
    assert b.delay(MB / 4, 0.0) == pytest.approx(0.25)


def test_a_sender_woken_late_with_a_backlog_makes_the_lost_time_up():
    b = TokenBucket(8e6, burst=MB, now=0.0, catch_up=1.0)     # 1 s of 1 MB/s
    b.take(MB, 0.0, backlog=True)
    # Due at 1.0, woken at 1.3: it goes, and the 0.3 s earned late count,
    # so the next chunk is due at 2.0 again, not 2.3.
    assert b.delay(MB, 1.3) == 0.0
    b.take(MB, 1.3, backlog=True)
    assert b.delay(MB, 1.3) == pytest.approx(0.7)
    # 2.5 s late: one second's bytes are made up at once, the rest is lost.
    assert b.delay(MB, 4.5) == 0.0
    b.take(MB, 4.5, backlog=True)
    assert b.delay(MB, 4.5) == 0.0
    b.take(MB, 4.5, backlog=True)
    assert b.delay(MB, 4.5) == pytest.approx(1.0)


def test_the_catch_up_is_counted_in_seconds_of_the_rate_not_in_chunks():
    # 0.05 s at 8 Mbit/s is 50 KB: a sender 0.5 s late with 10 KB chunks
    # sends five of them at once beyond its burst of one, not fifty.
    b = TokenBucket(8e6, burst=10_000, now=0.0, catch_up=0.05)
    b.take(10_000, 0.0, backlog=True)
    at_once = 0
    while b.delay(10_000, 0.51) == 0.0:
        b.take(10_000, 0.51, backlog=True)
        at_once += 1
    assert at_once == 6
    b.set_rate(80e6, 1.0)                     # ten times the rate: 500 KB
    at_once = 0
    while b.delay(10_000, 2.0) == 0.0:
        b.take(10_000, 2.0, backlog=True)
        at_once += 1
    assert at_once == 51


def test_without_catch_up_or_backlog_a_late_wake_up_is_lost():
    tight = TokenBucket(8e6, burst=MB, now=0.0)
    tight.take(MB, 0.0, backlog=True)
    tight.take(MB, 1.3, backlog=True)
    assert tight.delay(MB, 1.3) == pytest.approx(1.0)
    # An idle sender (nothing queued after its chunk) is not late: 100 s
    # idle save up one burst, not burst + catch-up.
    idle = TokenBucket(8e6, burst=MB, now=0.0, catch_up=1.0)
    idle.take(MB, 0.0, backlog=False)
    idle.take(MB, 100.0, backlog=True)
    assert idle.delay(MB, 100.0) == pytest.approx(1.0)


@pytest.mark.parametrize("rate,burst", [(0, MB), (-1, MB), (None, MB), (8e6, 0)])
def test_a_bucket_without_a_positive_rate_and_burst_is_refused(rate, burst):
    with pytest.raises(ValueError, match="positive"):
        TokenBucket(rate, burst, now=0.0)


# ------------------------------------------------------------ the Endpoint

CHUNK = 256 * 1024
RATE = 16e6                      # 4 MB at 16 Mbit/s: 2 s
TENSOR = np.zeros(1_000_000, np.float32)   # 4 MB


@pytest.fixture(params=[False, True], ids=["plain", "queued"])
def trio(request):
    """a talks to b (to be paced) and c (not)."""
    pa, pb, pc = free_port(), free_port(), free_port()
    a = Endpoint("a", "127.0.0.1", pa, {"b": ("127.0.0.1", pb), "c": ("127.0.0.1", pc)},
                 chunk_bytes=CHUNK, queued=request.param)
    b = Endpoint("b", "127.0.0.1", pb, {"a": ("127.0.0.1", pa)}, chunk_bytes=CHUNK)
    c = Endpoint("c", "127.0.0.1", pc, {"a": ("127.0.0.1", pa)}, chunk_bytes=CHUNK)
    connected(a, b, c)
    yield a, b, c
    for ep in (a, b, c):
        ep.close(drain=False)


def connected(a, *others):
    """Return once a's connections to the others are up: a connection still
    being made would hold the first chunk back and skew its arrival time."""
    for ep in others:
        a.send(ep.name, {"type": "hello"})
        assert ep.recv(timeout=10).header["type"] == "hello"


def receive_in_background(ep, timeout=30):
    """Start receiving one message on ep in a thread (so its arrival times
    are taken as the chunks come); (thread, list the message lands in)."""
    got = []
    thread = threading.Thread(target=lambda: got.append(ep.recv(timeout=timeout)))
    thread.start()
    return thread, got


def arrival_rate(m):
    """Payload bit/s from the first chunk's arrival to the last one's; the
    first chunk's bytes arrived at the start, so they do not count."""
    return (m.payload.nbytes - CHUNK) * 8 / (m.last - m.first)


def test_a_paced_peer_receives_at_the_set_rate_and_an_unpaced_one_is_unaffected(trio):
    a, b, c = trio
    a.set_rate("b", RATE)
    assert (a.rate("b"), a.rate("c")) == (RATE, None)
    to_b, at_b = receive_in_background(b)
    to_c, at_c = receive_in_background(c)
    a.send("b", {"type": "t"}, TENSOR)
    a.send("c", {"type": "t"}, TENSOR)
    a.flush(timeout=30)                          # honours the pacing: waits for b's data
    to_b.join(timeout=30)
    to_c.join(timeout=30)
    (mb,), (mc,) = at_b, at_c
    assert np.array_equal(mb.payload, TENSOR) and np.array_equal(mc.payload, TENSOR)
    assert arrival_rate(mb) / RATE == pytest.approx(1.0, abs=0.10)
    sent, seconds = a.paced("b")
    assert sent == TENSOR.nbytes - CHUNK and sent * 8 / seconds / RATE == pytest.approx(1.0, abs=0.10)
    # c's copy went as fast as loopback takes it, not at b's rate.
    assert arrival_rate(mc) > 4 * RATE and a.paced("c") == (0, 0.0)


def test_a_paced_sender_keeps_receiving_while_its_data_waits_and_recv_paces_it(trio):
    a, b, _ = trio
    a.set_rate("b", RATE)
    to_b, at_b = receive_in_background(b)        # b's data socket, read in its own thread
    a.send("b", {"type": "t"}, TENSOR)
    assert a.queue_length("b") == 1              # send returned with the data still queued
    b.send("a", {"type": "ping"})                # from b's other socket, the one towards a
    assert a.recv(timeout=5).header["type"] == "ping"
    assert a.queue_length("b") == 1              # 2 s of data cannot have left yet
    while to_b.is_alive():                       # the agent's loop: receiving releases chunks
        try:
            a.recv(timeout=0.5)
        except RecvTimeout:
            pass
    (mb,) = at_b
    assert np.array_equal(mb.payload, TENSOR)
    assert arrival_rate(mb) / RATE == pytest.approx(1.0, abs=0.10)


def test_a_rate_change_mid_message_takes_hold_at_once(trio):
    a, b, _ = trio
    a.set_rate("b", RATE)
    to_b, at_b = receive_in_background(b)
    a.send("b", {"type": "t"}, TENSOR)
    a.flush(timeout=1.0)                         # about half of it at 16 Mbit/s
    before = a.paced("b")
    a.set_rate("b", 2 * RATE)
    assert a.rate("b") == 2 * RATE
    a.flush(timeout=30)
    to_b.join(timeout=30)
    after = a.paced("b")
    assert at_b and before[0] > 0 and after[0] > before[0]
    achieved = [before[0] * 8 / before[1], (after[0] - before[0]) * 8 / (after[1] - before[1])]
    assert achieved[0] / RATE == pytest.approx(1.0, abs=0.10), achieved
    assert achieved[1] / (2 * RATE) == pytest.approx(1.0, abs=0.10), achieved


def test_a_sender_that_gets_the_cpu_late_still_keeps_its_rate(trio, request):
    """Another thread of the sender's process holds the GIL for up to 20 ms
    at a time, so the sender (and its receiver, in the same process) wakes
    for each chunk, 65 ms apart at 32 Mbit/s, mostly 15-40 ms late, and
    now and then, when the other thread wins the GIL several times running,
    100-250 ms late.  Lost each time, the delays would leave about
    65 / (65 + 20) = 0.76 of the rate; made up (PACE_CATCH_UP), only the
    last wake-up's delay is lost, at most about 40 ms of the 2 s the 8 MB
    take: 0.98.  A catch-up of 50 ms, shorter than the long waits, left
    0.88-0.96 in half the runs here.  Two cores shared with the host: a
    send is not judged when the hypervisor took the CPU (tests/stalls.py)."""
    a, b, _ = trio
    rate, tensor = 2 * RATE, np.zeros(2_000_000, np.float32)
    a.set_rate("b", rate)

    def send_with_a_hog():
        """(bytes released while paced, seconds, whether b got them) of one send."""
        stop = threading.Event()

        def hog():
            while not stop.is_set():
                sum(range(1000))

        interval = sys.getswitchinterval()
        sys.setswitchinterval(0.02)
        spinner = threading.Thread(target=hog)
        before = a.paced("b")
        try:
            spinner.start()
            to_b, at_b = receive_in_background(b)
            a.send("b", {"type": "t"}, tensor)
            a.flush(timeout=30)
            to_b.join(timeout=30)
        finally:
            stop.set()
            spinner.join()
            sys.setswitchinterval(interval)
        after = a.paced("b")
        return after[0] - before[0], after[1] - before[1], bool(at_b)

    def kept(run):
        return 0.93 <= run[0] * 8 / run[1] / rate <= 1.05

    run = measured(send_with_a_hog, kept)
    sent, seconds, arrived = run.detail
    # The first chunk of each send goes from a bucket refilled while idle.
    assert arrived and sent == tensor.nbytes - CHUNK, run
    judge(request, "a paced send keeps 0.93-1.05 of its rate beside a GIL hog", [run])


def two_endpoints():
    pa, pb = free_port(), free_port()
    return (Endpoint("a", "127.0.0.1", pa, {"b": ("127.0.0.1", pb)}, chunk_bytes=CHUNK),
            Endpoint("b", "127.0.0.1", pb, {"a": ("127.0.0.1", pa)}, chunk_bytes=CHUNK))


def test_setting_the_rate_to_none_releases_what_waits_and_later_sends_go_unpaced():
    a, b = two_endpoints()
    try:
        connected(a, b)
        a.set_rate("b", RATE)
        a.send("b", {"type": "t", "i": 0}, TENSOR)
        assert a.queue_length("b") == 1
        a.set_rate("b", None)
        # Nobody polled a: the lift itself handed the rest to the socket.
        assert a.rate("b") is None and a.queue_length("b") == 0
        a.send("b", {"type": "t", "i": 1}, TENSOR)
        assert a.queue_length("b") == 0
        got = [b.recv(timeout=10) for _ in range(2)]
        assert [m.header["i"] for m in got] == [0, 1]
        assert all(np.array_equal(m.payload, TENSOR) for m in got)
        assert arrival_rate(got[1]) > 4 * RATE
    finally:
        a.close(drain=False)
        b.close(drain=False)


def test_a_closing_endpoint_sends_its_paced_data_at_the_rate_before_it_goes():
    a, b = two_endpoints()
    try:
        connected(a, b)
        a.set_rate("b", RATE)
        to_b, at_b = receive_in_background(b)
        a.send("b", {"type": "last"}, TENSOR)
        a.close()                                # drain: waits for the paced data
        to_b.join(timeout=30)
        (m,) = at_b
        assert np.array_equal(m.payload, TENSOR)
        assert arrival_rate(m) / RATE == pytest.approx(1.0, abs=0.10)
    finally:
        b.close(drain=False)


def test_pacing_an_unknown_peer_or_a_negative_rate_is_refused():
    ep = Endpoint("a", "127.0.0.1", free_port(), {"b": ("127.0.0.1", free_port())})
    try:
        with pytest.raises(KeyError, match="no peer 'x'"):
            ep.set_rate("x", RATE)
        with pytest.raises(ValueError, match="negative"):
            ep.set_rate("b", -1)
        assert ep.rate("b") is None
    finally:
        ep.close(drain=False)
