"""The machine's CPU as /proc/stat counts it, and whether a run saturated it.

Idle time is accounted exactly, while the busy fields are sampled on the
timer tick and miss short wake-ups (the delay line's 1 ms ticks), so busy
is taken as what is not idle.

Why a run reports it: every emulated host, router, relay and delay line
shares this machine's cores.  Where they are all busy, a train leaves late,
a relay forwards late and the delay line releases frames in clumps, so the
times measured are the emulator's, not the WAN's.  On NetStorm's 9-DC WAN
with a 10 MB model, two cores were busy 95-100% of the run, and the same
plan synchronized at 2.7-3.3x the lower bound at 20/4 Mbit/s but at 1.8x at
half those rates (`results/planner-figure/README.md`).
"""

import os
import time

IDLE_FIELDS = (3, 4)          # idle, iowait
SATURATED = 0.95              # a second with this share of all cores busy is saturated
WARN_SHARE = 0.25             # a run with this share of saturated seconds gets a warning


def idle_seconds():
    """Seconds all cores have been idle since boot."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    return sum(int(fields[i]) for i in IDLE_FIELDS) / os.sysconf("SC_CLK_TCK")


def busy_seconds():
    """Seconds every core spent busy, counted from an arbitrary start."""
    return time.monotonic() * os.cpu_count() - idle_seconds()


class CpuMeter:
    """Share of all cores busy since it started, or since the last `lap`."""

    def __init__(self):
        self.start = (time.monotonic(), idle_seconds())

    def busy(self):
        elapsed = (time.monotonic() - self.start[0]) * os.cpu_count()
        return max(0.0, min(1.0, 1.0 - (idle_seconds() - self.start[1]) / elapsed)) if elapsed > 0 else 0.0

    def lap(self):
        share = self.busy()
        self.start = (time.monotonic(), idle_seconds())
        return share


def load_summary(samples, t0=None, t1=None):
    """{cores, busy, saturated} over the samples ([{t, busy, cores}], one
    per interval) between t0 and t1: the mean share of all cores busy and
    the share of intervals at or above SATURATED; None without samples."""
    kept = [s for s in samples if (t0 is None or s["t"] >= t0) and (t1 is None or s["t"] <= t1)]
    if not kept:
        return None
    rows = [s["busy"] for s in kept]
    return {"cores": kept[0].get("cores"), "busy": sum(rows) / len(rows),
            "saturated": sum(b >= SATURATED for b in rows) / len(rows)}


def describe(load):
    """One line for a run's report."""
    if not load:
        return "-"
    cores = f"of {load['cores']} cores " if load.get("cores") else "of the cores "
    line = (f"{load['busy'] * 100:.0f}% {cores}busy on average, "
            f"{load['saturated'] * 100:.0f}% of the seconds at {SATURATED * 100:.0f}% or more")
    if load["saturated"] >= WARN_SHARE:
        line += ": the emulator, not the WAN, may have set the pace"
    return line
