"""What a WAN link carried into this DC, read from the router's own
interface counters (the probe runs on the router, and /proc/net/dev is
per network namespace).

A train that loses most of its frames found the link's queue full: the
link was sending at its capacity, so what the router received over it in
the last moments is a reading of that capacity.  That is how the probe
follows a link that drops under a full load, when no train gets through
to be timed (on NetStorm's 9-DC WAN, a link that fell from 5.5 to 0.83
Mbit/s under the plan's traffic delivered no timeable train for 20 s)."""

import time

PROC_NET_DEV = "/proc/net/dev"
WINDOW = 1.0           # seconds of counters a reading spans (our choice)
KEEP = 4.0             # seconds of samples kept


def rx_bytes(text):
    """{interface: received bytes} from /proc/net/dev's text."""
    out = {}
    for line in text.splitlines()[2:]:
        name, _, fields = line.partition(":")
        values = fields.split()
        if values:
            out[name.strip()] = int(values[0])
    return out


class CarriedRates:
    """Received-byte counters of the interfaces the WAN links from other DCs
    arrive on ({src DC: interface}), sampled on demand."""

    def __init__(self, intfs, read=None, window=WINDOW):
        self.intfs = dict(intfs)
        self.read = read or (lambda: open(PROC_NET_DEV).read())
        self.window = window
        self.samples = []       # [(t, {interface: bytes})]

    def sample(self, t=None):
        if not self.intfs:
            return
        t = time.monotonic() if t is None else t
        self.samples.append((t, rx_bytes(self.read())))
        self.samples = [s for s in self.samples if t - s[0] <= KEEP]

    def rate(self, src, t=None):
        """Wire bit/s the link from `src` carried over the last `window`
        seconds (from the newest sample at least that old), or None."""
        intf = self.intfs.get(src)
        if intf is None:
            return None
        self.sample(t)
        t_now, now = self.samples[-1]
        older = [s for s in self.samples if t_now - s[0] >= self.window]
        if not older or intf not in now or intf not in older[-1][1]:
            return None
        t_then, then = older[-1]
        return (now[intf] - then[intf]) * 8 / (t_now - t_then)
