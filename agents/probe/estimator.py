"""Bandwidth and RTT estimate of one direction (src DC -> this DC).

Active samples come from packet-train dispersion (wire rate at the
bottleneck); passive samples from the goodput of real model transfers,
scaled to the wire (a transfer achieved at least that much, so it is a
floor for the estimate while it is fresh).

Smoothing is an EWMA with a change detector: two active samples in a row
that differ from the estimate by more than CHANGE_SHARE replace it, so a
step in the link is followed within two probe periods instead of being
averaged in slowly.

Until the first proper (non-coarse) train, an estimate is not `settled`: it
still sizes the next train, but it is held back from the record.  Start-up
trains are short (nothing is known yet to size them), their head passes the
shaper's burst at line rate, and a delay line slowed down by busy CPUs can
release a short train in one clump, so a short train can read many times the
link's rate (2.3 Gbit/s on a 50 Mbit/s link).
"""

import math
import statistics

WIRE_PER_GOODPUT = 1514 / 1448
ALPHA = 0.5
CHANGE_SHARE = 0.3
RTT_WINDOW = 5


class Estimator:
    def __init__(self, period):
        # How often the direction is probed (the probe period, times the
        # periods between its trains): ages are judged against it.
        self.period = period
        self.bw = None
        self.coarse = False
        self.settled = False           # a proper train has been seen
        self.available = None
        self.active_at = None
        self.last_active = None
        self.passive = None
        self.passive_at = None
        self._deviating = 0
        self.rtts = []
        self.samples = 0

    def add_active(self, t, rate, available=None, coarse=False):
        """A train's capacity (and available) rate.  A coarse sample (a train
        too short to time well, e.g. one whose tail a full queue dropped)
        stands in before a proper one exists, and otherwise only counts as
        evidence of a change, never into the average."""
        self.samples += 1
        self.last_active = rate
        self.available = rate if available is None else available
        self.active_at = t
        self.settled = self.settled or not coarse
        if self.bw is None or (self.coarse and not coarse):
            self.bw, self.coarse = rate, coarse
            self._deviating = 0
            return
        if abs(rate - self.bw) > CHANGE_SHARE * self.bw:
            self._deviating += 1
            if self._deviating >= 2:
                self.bw, self.coarse = rate, coarse
                self._deviating = 0
            return
        self._deviating = 0
        if not coarse:
            self.bw = ALPHA * rate + (1 - ALPHA) * self.bw

    def add_passive(self, t, goodput):
        self.passive = goodput * WIRE_PER_GOODPUT
        self.passive_at = t

    def add_rtt(self, t, rtt):
        self.rtts = (self.rtts + [rtt])[-RTT_WINDOW:]

    def estimate(self, t):
        """{bw, active, passive, rtt, confidence, age, settled} or None before
        any sample."""
        if self.bw is None and self.passive is None:
            return None
        bw = self.bw or 0.0
        passive_fresh = self.passive is not None and t - self.passive_at <= 3 * self.period
        if passive_fresh and self.passive > bw:
            bw = self.passive
        ages = [t - x for x in (self.active_at, self.passive_at if passive_fresh else None) if x is not None]
        age = min(ages) if ages else math.inf
        # Confidence grows with samples and decays with age (one period ~ fresh).
        confidence = (self.samples / (self.samples + 1.0)) * math.exp(-max(0.0, age - self.period)
                                                                      / (3 * self.period))
        return {"bw": bw, "active": self.bw, "available": self.available,
                "passive": self.passive if passive_fresh else None,
                "rtt": statistics.median(self.rtts) if self.rtts else None,
                "confidence": round(confidence, 4), "age": age, "settled": self.settled}
