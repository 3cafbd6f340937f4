"""The machine's CPU as /proc/stat counts it, whether a run saturated it,
and how much of it the hypervisor took.

Idle time is accounted exactly, while the busy fields are sampled on the
timer tick and miss short wake-ups (the delay line's 1 ms ticks), so busy
is taken as what is neither idle nor stolen.  Stolen time is what a
virtual machine's cores were ready to run but the host ran something
else, as the hypervisor reports it.

Why a run reports it: every emulated host, router, relay and delay line
shares this machine's cores.  Where they are all busy, a train leaves late,
a relay forwards late and the delay line releases frames in clumps, so the
times measured are the emulator's, not the WAN's.  On NetStorm's 9-DC WAN
with a 10 MB model, two cores were busy 95-100% of the run, and the same
plan synchronized at 2.7-3.3x the lower bound at 20/4 Mbit/s but at 1.8x at
half those rates (`results/planner-figure/README.md`).

Why stolen time too: while the host holds a core back, nothing on it runs,
not the shapers' dequeue, not the delay line, not a probe's receiver.
Steal comes with wake-ups, not with load: on one machine here, two cores
spinning for 20 s lost 0.3% to the host; a thread waking every 0.5 ms,
5% while the cores were idle; a 9-DC probe test 8-13% while they were
5-8% busy.  A 1 ms sleep there overslept by 0.18 ms at the 99th
percentile when the machine was quiet and by 2.8 ms during that test
(6.4 ms at the 99.9th, 24 ms at most), and the test failed in five of
six runs, its probes reading some links at 0.57-0.84 of their rates
(the probes' tolerance is 15%).
"""

import os
import time

IDLE_FIELDS = (3, 4)          # idle, iowait
STEAL_FIELD = 7
SATURATED = 0.95              # a second with this share of all cores busy is saturated
WARN_SHARE = 0.25             # a run with this share of saturated seconds gets a warning
STOLEN_WARN = 0.05            # a run that lost this share of the cores' time gets a warning
                              # (and tests/stalls.py retries a timing measurement)


def jiffies():
    """/proc/stat's counters of all cores since boot (user, nice, system,
    idle, iowait, irq, softirq, steal, ...), in clock ticks."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def reading():
    """(monotonic seconds, seconds all cores have been idle since boot,
    seconds the hypervisor has held them back since boot)."""
    fields, tick = jiffies(), os.sysconf("SC_CLK_TCK")
    return time.monotonic(), sum(fields[i] for i in IDLE_FIELDS) / tick, fields[STEAL_FIELD] / tick


def busy_seconds():
    """Seconds every core spent busy (neither idle nor stolen), counted
    from an arbitrary start."""
    now, idle, stolen = reading()
    return now * os.cpu_count() - idle - stolen


def shares(before, after, cores):
    """{busy, stolen}: the shares of all cores' time between two readings
    (monotonic seconds, idle seconds, stolen seconds) that ran here and
    that the hypervisor took."""
    elapsed = (after[0] - before[0]) * cores
    if elapsed <= 0:
        return {"busy": 0.0, "stolen": 0.0}
    idle, stolen = after[1] - before[1], after[2] - before[2]
    return {"busy": _share(1.0 - (idle + stolen) / elapsed), "stolen": _share(stolen / elapsed)}


def _share(x):
    return max(0.0, min(1.0, x))          # the counters move in whole ticks


class CpuMeter:
    """Shares of all cores busy and stolen since it started, or since the
    last `lap`."""

    def __init__(self):
        self.start = reading()

    def shares(self):
        return shares(self.start, reading(), os.cpu_count())

    def busy(self):
        return self.shares()["busy"]

    def lap(self):
        now = reading()
        out = shares(self.start, now, os.cpu_count())
        self.start = now
        return out


def load_summary(samples, t0=None, t1=None):
    """{cores, busy, saturated, stolen} over the samples ([{t, busy,
    stolen, cores}], one per interval) between t0 and t1: the mean share
    of all cores busy, the share of intervals at or above SATURATED, and
    the mean share stolen (None where the samples did not record it);
    None without samples."""
    kept = [s for s in samples if (t0 is None or s["t"] >= t0) and (t1 is None or s["t"] <= t1)]
    if not kept:
        return None
    rows = [s["busy"] for s in kept]
    stolen = [s["stolen"] for s in kept if s.get("stolen") is not None]
    return {"cores": kept[0].get("cores"), "busy": sum(rows) / len(rows),
            "saturated": sum(b >= SATURATED for b in rows) / len(rows),
            "stolen": sum(stolen) / len(stolen) if stolen else None}


def busiest_machine(samples, t0=None, t1=None):
    """load_summary of the machine whose cores were busiest, where the
    samples come from several machines (a WAN spanning machines: each
    sample names its `machine`), with `machine` and `machines` (how many
    there were); the plain load_summary where they come from one."""
    by_machine = {}
    for s in samples:
        by_machine.setdefault(s.get("machine"), []).append(s)
    if None in by_machine:
        return load_summary(samples, t0, t1)
    loads = {m: load_summary(rows, t0, t1) for m, rows in sorted(by_machine.items())}
    loads = {m: load for m, load in loads.items() if load}
    if not loads:
        return None
    machine = max(loads, key=lambda m: loads[m]["busy"])
    return {**loads[machine], "machine": machine, "machines": len(loads)}


def describe(load):
    """One line for a run's report."""
    if not load:
        return "-"
    cores = f"of {load['cores']} cores " if load.get("cores") else "of the cores "
    if load.get("machine"):
        cores += f"on {load['machine']}, the busiest of {load['machines']} machines, "
    line = (f"{load['busy'] * 100:.0f}% {cores}busy on average, "
            f"{load['saturated'] * 100:.0f}% of the seconds at {SATURATED * 100:.0f}% or more")
    if load["saturated"] >= WARN_SHARE:
        line += ": the emulator, not the WAN, may have set the pace"
    if load.get("stolen") is not None:
        line += f"; {load['stolen'] * 100:.0f}% taken by the hypervisor"
        if load["stolen"] >= STOLEN_WARN:
            line += ": the host, not the WAN, may have set the pace"
    return line
