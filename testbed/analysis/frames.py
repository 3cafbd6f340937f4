"""A run folder as pandas DataFrames, one per kind of record, each row one
event or sample as it was written, with `time`: seconds since the run's
start (the first server or worker ready; for a run of programs, their
launch).  What a report draws, a notebook can compute again."""

import os

import pandas as pd

from agents.events import read_events
from testbed.analysis.wan import link_series, run_start
from testbed.records.runfolder import RunFolder

TABLES = ("iterations", "evaluations", "links", "link_changes", "probes", "cpu", "decisions",
          "metrics")


class Frames:
    def __init__(self, path):
        self.folder = RunFolder(path)
        self.events = {name: read_events(self.folder.agent_file(name, "jsonl"))
                       for name in self.folder.agent_names()}
        runner = read_events(self.folder.file("runner.jsonl"))
        launched = next((e["t"] for e in runner if e["ev"] == "programs_started"), None)
        self.start = run_start(self.events) or launched or 0.0

    def _rows(self, kind, role=None):
        rows = []
        for agent, events in sorted(self.events.items()):
            for e in events:
                if e["ev"] == kind:
                    rows.append({**{k: v for k, v in e.items() if k not in ("ev", "wall")},
                                 "agent": agent, "time": e["t"] - self.start})
        return pd.DataFrame(rows)

    def _timed(self, rows):
        frame = pd.DataFrame(rows)
        if len(frame):
            frame["time"] = frame["t"] - self.start
        return frame

    def iterations(self):
        """One row per worker and synchronization round (`iter` events)."""
        return self._rows("iter")

    def evaluations(self):
        """One row per evaluation: accuracy, loss and the metrics asked for."""
        return self._rows("eval")

    def links(self):
        """One row per WAN direction and second: its configured rate and the
        bit/s it carried (from the kernel's byte counters)."""
        rows = [{"src": a, "dst": b, "t": t, "rate": rate, "throughput": measured}
                for (a, b), series in link_series(read_events(self.folder.link_samples)).items()
                for t, rate, measured in series]
        return self._timed(rows)

    def link_changes(self):
        """Every live change of a link: dynamics, console, inject, the page."""
        return self._timed(read_events(self.folder.links))

    def probes(self):
        """Every estimate the probes published, per DC pair."""
        return self._rows("estimate")

    def cpu(self):
        """The machine's busy and stolen CPU shares, every second."""
        return self._timed(read_events(self.folder.cpu_samples))

    def decisions(self):
        """Every decision the coordinator recorded (plans, releases, pairs)."""
        return self._rows("decision")

    def metrics(self):
        """The JSON lines a run's programs wrote to their metrics files, with
        their host and when the runner saw them."""
        return self._timed(read_events(os.path.join(self.folder.path, "programs", "metrics.jsonl")))

    def table(self, name):
        if name not in TABLES:
            raise ValueError(f"no table {name!r}; tables: {', '.join(TABLES)}")
        return getattr(self, name)()
