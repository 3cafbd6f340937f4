"""Append-only JSON-lines event log: one event per line, written through.

Each line carries a monotonic timestamp `t` (CLOCK_MONOTONIC is shared by
all namespaces on the machine, so agents' times compare directly) and the
wall-clock time.  Every line is flushed as it is written, so a crash loses
nothing already logged.
"""

import json
import time


class EventLog:
    def __init__(self, path, agent):
        self.agent = agent
        self.f = open(path, "a", buffering=1)

    def __call__(self, kind, **fields):
        record = {"t": time.monotonic(), "wall": time.time(), "agent": self.agent, "ev": kind}
        record.update(fields)
        self.f.write(json.dumps(record) + "\n")

    def close(self):
        self.f.close()


def read_events(path):
    """All complete events in a file (a torn last line is skipped)."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except FileNotFoundError:
        pass
    return out
