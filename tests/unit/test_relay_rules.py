import random

from testbed.emulation.relay import EARLY, Direction


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
    for i in range(500):
        d.admit(i.to_bytes(2, "big"), now=i * 1e-4)
    deadlines = [t for t, _ in d.queue]
    assert deadlines == sorted(deadlines)
    assert max(deadlines) > 0.0499 + 0.005  # the jitter did spread them out
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
