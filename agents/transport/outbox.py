"""What waits to leave for one peer: a fair queue of messages (flows share
the connection by weight) and, for a paced peer, a token bucket over
payload bytes that decides when the next chunk may leave, with a meter of
the rate achieved while backlogged."""

from dataclasses import dataclass

from agents.transport.fairqueue import FairQueue
from agents.transport.pacing import TokenBucket

# Seconds of its rate a paced sender woken late may make up
# (agents.transport.pacing, `catch_up`): more than a busy two-core machine
# makes it wait (tests/unit/test_pacing.py measures what it keeps).  The
# burst goes into the sender's socket: TCP's window, not this, sets what
# reaches a WAN link's queue.
PACE_CATCH_UP = 0.25


@dataclass
class PaceMeter:
    """Payload released to a paced peer while it had a backlog: each chunk
    that was already waiting when the one before it left counts with the
    time between the two, so idle gaps count as neither bytes nor time."""
    bytes: int = 0
    seconds: float = 0.0
    last: float = None               # the previous release, None when idle


class Outbox:
    def __init__(self):
        self.queue = FairQueue()
        self.bucket = None            # a TokenBucket while paced
        self.meter = None             # a PaceMeter once ever paced

    def __len__(self):
        return len(self.queue)

    def __bool__(self):
        return bool(self.queue)

    def append(self, out, flow, weight):
        self.queue.append(out, flow, weight, out.nbytes)

    def set_rate(self, bits_per_s, burst, now):
        """Pace to bits_per_s of payload from now on (None or 0: unpaced)."""
        if not bits_per_s:
            self.bucket = None
            if self.meter is not None:
                self.meter.last = None
        elif bits_per_s < 0:
            raise ValueError(f"a rate must not be negative, not {bits_per_s!r} bit/s")
        elif self.bucket is not None:
            self.bucket.set_rate(bits_per_s, now)
        else:
            self.bucket = TokenBucket(bits_per_s, burst, now, catch_up=PACE_CATCH_UP)
            if self.meter is None:
                self.meter = PaceMeter()

    def release_wait(self, now):
        """Seconds until the next chunk may leave (0: now, or nothing queued)."""
        if not self.queue or self.bucket is None:
            return 0.0
        out = self.queue[0]
        if not out.chunks:
            return 0.0
        return self.bucket.delay(out.chunks[out.next][1], now)

    def held(self, out, length, now):
        """True when the bucket holds back `length` bytes of `out` now."""
        return self.bucket is not None and self.bucket.delay(length, now) > 0

    def released(self, out, length, now):
        """`length` bytes of `out` left: spend their tokens and meter them."""
        m = self.meter
        if m.last is not None and (out.next > 0 or out.queued_at <= m.last):
            m.bytes += length
            m.seconds += now - m.last
        backlog = out.next + 1 < len(out.chunks) or len(self.queue) > 1
        m.last = now if backlog else None
        self.bucket.take(length, now, backlog=backlog)
