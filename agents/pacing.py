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
"""


class TokenBucket:
    def __init__(self, rate, burst, now):
        """rate in bit/s (> 0), burst in bytes (> 0); starts full at `now`."""
        if burst <= 0:
            raise ValueError(f"a token bucket needs a positive burst, not {burst!r} bytes")
        self.burst = float(burst)
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

    def take(self, nbytes, now):
        """Spend nbytes' tokens (the caller checked `delay` first)."""
        self._refill(now)
        self.tokens -= nbytes

    def _refill(self, now):
        if now > self.stamp:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate / 8)
            self.stamp = now
