"""A token bucket that paces one sender's chunks to a rate.

Pure and clock-injected: every call takes `now` (seconds, any monotonic
clock), so the numbers can be checked by hand.  Tokens are bytes; they
refill at rate/8 per second and never exceed `burst`, so idle time saves
up at most one burst.

A chunk may go once the bucket holds min(nbytes, burst) tokens; taking it
may leave the bucket in debt when the chunk is larger than the burst, and
the debt is repaid before the next chunk, so the long-run rate holds for
any chunk size.  A rate change takes effect at once: tokens (or debt)
earned so far are kept, the rest accrues at the new rate.

`catch_up` is for a sender that runs late.  A userspace sender wakes when
its next chunk is due, but on a busy machine it gets the CPU (and Python's
GIL) some milliseconds later; with the cap at one burst, every such delay
is lost for good and the rate falls short by the delay over the chunk
time (10-18% on two loaded cores).  While the sender has a backlog (it
says so when it takes a chunk), the cap is burst + catch_up seconds of
the rate, so time it lost waiting for the CPU is made up by sending the
next chunks sooner, at most `catch_up` seconds of bytes ahead of an exact
schedule.  It is counted in time, not chunks, so the extra burst stays
small however large the chunks are.  Idle time still saves up at most one
burst: a sender with nothing queued is not late.
"""


class TokenBucket:
    def __init__(self, rate, burst, now, catch_up=0.0):
        """rate in bit/s (> 0), burst in bytes (> 0), catch_up in seconds
        (>= 0); starts full (one burst) at `now`."""
        if burst <= 0:
            raise ValueError(f"a token bucket needs a positive burst, not {burst!r} bytes")
        if catch_up < 0:
            raise ValueError(f"a token bucket's catch-up must not be negative, not {catch_up!r} s")
        self.burst = float(burst)
        self.catch_up = float(catch_up)
        self.backlog = False
        self.tokens = self.burst
        self.stamp = now
        self.rate = None
        self.set_rate(rate, now)

    def set_rate(self, rate, now):
        if not rate or rate <= 0:
            raise ValueError(f"a token bucket needs a positive rate, not {rate!r} bit/s")
        if self.rate is not None:
            self._refill(now)       # what was earned at the old rate stays earned
        self.stamp = max(self.stamp, now)
        self.rate = float(rate)

    def delay(self, nbytes, now):
        """Seconds to wait, from `now`, before nbytes may go (0 if at once)."""
        self._refill(now)
        missing = min(nbytes, self.burst) - self.tokens
        return max(0.0, missing * 8 / self.rate)

    def take(self, nbytes, now, backlog=False):
        """Spend nbytes' tokens (the caller checked `delay` first);
        `backlog`: more is ready to go after these, so a late wake-up
        before the next chunk is made up (see `catch_up`)."""
        self._refill(now)
        self.tokens -= nbytes
        self.backlog = backlog

    def _refill(self, now):
        if now > self.stamp:
            cap = self.burst + (self.catch_up * self.rate / 8 if self.backlog else 0.0)
            self.tokens = min(cap, self.tokens + (now - self.stamp) * self.rate / 8)
            self.stamp = now
