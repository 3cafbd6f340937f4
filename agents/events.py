"""Append-only JSON-lines event log: one event per line, written through.

Each line carries a monotonic timestamp `t` (CLOCK_MONOTONIC is shared by
all namespaces on the machine, so agents' times compare directly) and the
wall-clock time.  Every line is flushed as it is written, so a crash loses
nothing already logged.
"""

import json
import threading
import time


class EventLog:
    def __init__(self, path, agent):
        self.agent = agent
        self.f = open(path, "a", buffering=1)
        # A scheme may log from a communication thread too: one line at a time.
        self.lock = threading.Lock()

    def __call__(self, kind, **fields):
        record = {"t": time.monotonic(), "wall": time.time(), "agent": self.agent, "ev": kind}
        record.update(fields)
        line = json.dumps(record) + "\n"
        with self.lock:
            self.f.write(line)

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


class EventTail:
    """The events appended to a file since the last read (complete lines
    only: a line still being written waits for the next read)."""

    def __init__(self, path):
        self.path = path
        self.offset = 0

    def read(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in chunk[:end].splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out
