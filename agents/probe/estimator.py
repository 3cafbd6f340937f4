"""Bandwidth and RTT estimate of one direction (src DC -> this DC).

Active samples come from packet-train dispersion (wire rate at the
bottleneck); passive samples from the goodput of real model transfers,
scaled to the wire (a transfer achieved at least that much, so it is a
floor for the estimate while it is fresh).

Smoothing is the median of the last SMOOTH_READINGS proper samples within
CHANGE_SHARE of the estimate (of two, the higher), with a change
detector: two active samples in a row that differ from the estimate by
more than CHANGE_SHARE replace it, so a step in the link is followed
within two probe periods instead of being averaged in slowly.  A median,
not a mean, because the samples a busy host spoils are spoiled one at a
time and one way: a shaper whose timer fires late sends the few frames
its bucket holds at once and loses the rest of the delay, so the train
reads low (gaps of 3-12 ms, then 3-4 frames together).  In three 9-DC
probe tests on a machine whose host held back wake-ups (`testbed.cpu`),
1,180 trains read a median of 0.99 of their 20 Mbit/s links, one in ten
under 0.93.  Replayed over them, an EWMA of weight 1/2 left 0.62% of the
estimates more than 15% off, and 1 of 216 directions after three
estimates; the median, 0.42% (all of them a direction's first proper
train, before a second) and none.  SMOOTH_READINGS is our choice.

The two deviating samples must also agree with each other (within
CHANGE_SHARE): a real step gives two alike readings, while a train a
saturated CPU delayed reads whatever its lateness made of it.

Once settled, a train that arrived within MIN_SPAN seconds and reads above
the estimate is a clump, not a sample.  Trains are sized to last at least
`schedule.USEFUL_TRAIN` at the estimate, so one that spans a few ticks of
the delay line's clock was released at once (a busy CPU ran the delay line
or the receiver's softirq late: on a two-core machine carrying 9 DCs, one
train in six read 25-170x its link), or its link is more than
USEFUL_TRAIN / MIN_SPAN times faster than the estimate.  For the second
case, CLUMPS_TO_RISE clumps in a row multiply the estimate by CLUMP_RISE,
so the next trains are sized longer and become timeable; MIN_SPAN and
both are our choices.

A train that lost too many frames to be timed met a full queue; what its
link carried meanwhile (`agents.probe.carried`) is then a coarse sample.

Until the first proper (non-coarse) train, an estimate is not `settled`: it
still sizes the next train, but it is held back from the record.  Start-up
trains are short (nothing is known yet to size them), their head passes the
shaper's burst at line rate, and a delay line slowed down by busy CPUs can
release a short train in one clump, so a short train can read many times the
link's rate (2.3 Gbit/s on a 50 Mbit/s link).

An estimate is `steady` while it is the median of SMOOTH_READINGS proper
trains and no deviating reading waits for a second: the probes may then read
the direction on a smaller budget (`schedule.budget_for`).  A step in the
link makes the next train deviate, which ends `steady` at once, so the
reading that confirms the step comes on the full budget.
"""

import math
import statistics

WIRE_PER_GOODPUT = 1514 / 1448
SMOOTH_READINGS = 3
CHANGE_SHARE = 0.3
MIN_SPAN = 0.005           # seconds: five ticks of the delay line's clock
CLUMPS_TO_RISE = 3
CLUMP_RISE = 2.0
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
        self._pending = None           # the last deviating sample, until a second agrees
        self._recent = []              # proper samples the estimate is the median of
        self._clumps_in_row = 0
        self.clumps = 0
        self.rtts = []
        self.samples = 0

    def add_active(self, t, rate, available=None, coarse=False, span=None):
        """A train's capacity (and available) rate; `span` is the seconds
        between its first and last arrival.  A coarse sample (a train too
        short to time well, e.g. one whose tail a full queue dropped)
        stands in before a proper one exists, and otherwise only counts as
        evidence of a change, never into the average."""
        if self.settled and span is not None and span < MIN_SPAN and rate > self.bw:
            self.clumps += 1
            self._clumps_in_row += 1
            if self._clumps_in_row >= CLUMPS_TO_RISE:
                self._restart(self.bw * CLUMP_RISE, coarse=self.coarse)
                self._clumps_in_row = 0
            return
        self._clumps_in_row = 0
        self.samples += 1
        self.last_active = rate
        self.available = rate if available is None else available
        self.active_at = t
        self.settled = self.settled or not coarse
        if self.bw is None or (self.coarse and not coarse):
            self._restart(rate, coarse)
            return
        if abs(rate - self.bw) > CHANGE_SHARE * self.bw:
            if self._pending is not None and abs(rate - self._pending) <= CHANGE_SHARE * self._pending:
                self._restart(rate, coarse)
            else:
                self._pending = rate
            return
        self._pending = None
        if not coarse:
            self._recent = (self._recent + [rate])[-SMOOTH_READINGS:]
            self.bw = statistics.median_high(self._recent)

    def _restart(self, rate, coarse):
        """The estimate becomes `rate`, and the median starts over from it."""
        self.bw, self.coarse = rate, coarse
        self._pending = None
        self._recent = [] if coarse else [rate]

    def add_carried(self, t, rate):
        """What the link carried (wire bit/s) while a train that lost most
        of its frames met its full queue: the link was sending at its
        capacity.  A coarse sample, so it replaces the estimate only when
        the next sample agrees, and the next proper train replaces it."""
        if self.bw is not None:
            self.add_active(t, rate, coarse=True)

    def add_passive(self, t, goodput):
        self.passive = goodput * WIRE_PER_GOODPUT
        self.passive_at = t

    def add_rtt(self, t, rtt):
        self.rtts = (self.rtts + [rtt])[-RTT_WINDOW:]

    def estimate(self, t):
        """{bw, active, passive, rtt, confidence, age, settled, readings,
        steady} or None before any sample; `readings` is how many proper
        trains the active estimate is the median of (at most SMOOTH_READINGS)."""
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
        return {"bw": bw, "active": self.bw, "last": self.last_active, "available": self.available,
                "passive": self.passive if passive_fresh else None,
                "rtt": statistics.median(self.rtts) if self.rtts else None,
                "confidence": round(confidence, 4), "age": age, "settled": self.settled,
                "clumps": self.clumps, "readings": len(self._recent), "steady": self.steady()}

    def steady(self):
        """Whether the estimate holds: the median of SMOOTH_READINGS proper
        trains, with no deviating reading waiting for a second."""
        return len(self._recent) >= SMOOTH_READINGS and self._pending is None
