import random
import socket
import statistics
import struct
import time

import pytest

from testbed.emulation.relay import EARLY, SO_TIMESTAMPNS, Direction, drain


class Sink:
    def __init__(self):
        self.sent = []

    def send(self, frame):
        self.sent.append(frame)


def test_a_frame_leaves_after_the_delay_and_not_before():
    out = Sink()
    d = Direction("ab", out, delay=0.02, jitter=0.0, loss=0.0, rng=random.Random(1))
    d.admit(b"x", now=10.0)
    d.flush(10.0195 - EARLY)
    assert out.sent == []
    d.flush(10.02)
    assert out.sent == [b"x"]
    assert (d.frames, d.bytes) == (1, 1)


def test_jitter_never_reorders_frames():
    out = Sink()
    d = Direction("ab", out, delay=0.01, jitter=0.009, loss=0.0, rng=random.Random(7))
    gaps, now, arrivals = random.Random(2), 0.0, []
    for i in range(500):
        now += gaps.expovariate(1 / 0.001)       # frames ~1 ms apart, jitter +-9 ms
        arrivals.append(now)
        d.admit(i.to_bytes(2, "big"), now=now)
    deadlines = [t for t, _ in d.queue]
    assert deadlines == sorted(deadlines)
    holds = [t - a for t, a in zip(deadlines, arrivals)]
    assert max(holds) - min(holds) > 0.009  # the jitter did spread them out
    d.flush(1.0)
    assert [int.from_bytes(f, "big") for f in out.sent] == list(range(500))


def test_jittered_delays_stay_within_the_configured_band():
    d = Direction("ab", Sink(), delay=0.02, jitter=0.005, loss=0.0, rng=random.Random(3))
    holds = []
    for i in range(2000):
        now = i * 1.0  # far apart: the ordering floor never applies
        d.admit(b"f", now)
        holds.append(d.queue[-1][0] - now)
    assert min(holds) >= 0.015 and max(holds) <= 0.025
    assert abs(sum(holds) / len(holds) - 0.02) < 0.0005


def test_loss_drops_the_configured_share_with_a_seed():
    d = Direction("ab", Sink(), delay=0.0, jitter=0.0, loss=0.1, rng=random.Random(42))
    for _ in range(20_000):
        d.admit(b"f", 0.0)
    assert abs(d.dropped / 20_000 - 0.1) < 0.01
    assert d.dropped + len(d.queue) == 20_000


def test_under_load_jittered_delays_stay_uniform_in_the_band_and_in_order():
    # 10,000 frames/s (one every 0.1 ms) through delay 20 ms +- 1 ms: frames
    # are much closer than the jitter, where a per-frame draw held behind
    # the frame ahead would skew delays towards 21 ms.
    d = Direction("ab", Sink(), delay=0.02, jitter=0.001, loss=0.0, rng=random.Random(5))
    n = 200_000
    for i in range(n):
        d.admit(b"f", i * 1e-4)
    deadlines = [t for t, _ in d.queue]
    assert deadlines == sorted(deadlines)
    holds = sorted(t - i * 1e-4 for i, t in enumerate(deadlines))
    assert holds[0] >= 0.019 - 1e-12 and holds[-1] <= 0.021 + 1e-12
    assert abs(statistics.fmean(holds) - 0.02) < 0.0001
    # uniform: the quartiles sit at 19.5, 20 and 20.5 ms
    for q, expected in ((0.25, 0.0195), (0.5, 0.02), (0.75, 0.0205)):
        assert abs(holds[int(q * n)] - expected) < 0.0001, (q, holds[int(q * n)])


class LateSocket:
    """Frames the kernel stamped earlier than the relay reads them."""

    def __init__(self, stamps):
        self.stamps = list(stamps)

    def recvmsg(self, size, anc_size):
        if not self.stamps:
            raise BlockingIOError
        t = self.stamps.pop(0)
        anc = [(socket.SOL_SOCKET, SO_TIMESTAMPNS, struct.pack("qq", int(t), round(t % 1 * 1e9)))]
        return b"f", anc, 0, None


def test_frames_read_late_are_held_from_their_kernel_arrival_not_from_the_read():
    d = Direction("ab", Sink(), delay=0.02, jitter=0.0, loss=0.0, rng=random.Random(1))
    # Three frames 5 ms apart, all read in one go 10 ms after the last
    # arrived: they leave 20 ms after each arrived, 5 ms apart, not together.
    wall = time.time()
    drain(LateSocket([wall - 0.02, wall - 0.015, wall - 0.01]), d, now=100.0)
    holds = [t - 100.0 for t, _ in d.queue]
    assert holds == pytest.approx([0.0, 0.005, 0.01], abs=0.0005)
