"""The small records a recipe's table is computed from, kept beside the
recipe so that table.csv can be recomputed from the repository alone
(the run folders, with their event logs, stay on the machine that ran).

results/<ID>/runs/ holds one folder per completed run, named by its
setting's label:

  setting.json     the setting's axis values (what the recipe varied)
  summary.json     the run's summary (testbed/analysis/report.py)
  evals.csv        t_s, accuracy: each evaluation, seconds since training
                   began (at the moment its model was taken)
  iterations.csv   it, sync_s, from_last_start_s, t_lb_s: per iteration
                   the slowest worker's sync time, the same counted from
                   the last start, and t_lb of the links as they were
  extra.json       what a recipe's own `extra(run, summary)` drew from
                   the run folder beyond these (only where it gave any)

and failed.json, the label and setting of each run that did not complete.
A recipe whose runs are not timed by iterations (programs) passes its own
`steps` to `keep`."""

import csv
import json
import os
import shutil
import statistics
from dataclasses import dataclass

from testbed.analysis import report
from testbed.analysis.accuracy import points_of, time_to_accuracy
from testbed.analysis.iterations import per_iteration
from testbed.records.runfolder import RunFolder

RUNS = "runs"
STEP_COLUMNS = ("it", "sync_s", "from_last_start_s", "t_lb_s")


@dataclass
class Record:
    label: str
    setting: dict          # the axis values
    summary: dict
    evals: list            # [(t_s, accuracy)]
    steps: list            # [{it, sync_s, from_last_start_s, t_lb_s}]
    extra: dict            # extra.json, {} where the recipe kept none

    def time_to(self, target):
        """Seconds to `target` accuracy by the shared rule (testbed/analysis/accuracy)."""
        return time_to_accuracy(self.evals, target)

    def times_to(self, levels):
        """{"tta_85": seconds to 85%, ...} for each accuracy level."""
        return {f"tta_{round(100 * level)}": self.time_to(level) for level in levels}

    def steady_steps(self):
        """The iterations after the first (which also opens the connections)."""
        return [s for s in self.steps if s["it"] > 0]

    def sync(self):
        """{sync, t_lb, over}: the medians over the steady iterations of the
        slowest worker's sync counted from the last start, of `t_lb` of the
        links as they were, and of each iteration's ratio of the two (None
        where no iteration has both)."""
        timed = [s for s in self.steady_steps() if s["from_last_start_s"] and s["t_lb_s"]]
        if not timed:
            return {"sync": None, "t_lb": None, "over": None}
        return {"sync": statistics.median(s["from_last_start_s"] for s in timed),
                "t_lb": statistics.median(s["t_lb_s"] for s in timed),
                "over": statistics.median(s["from_last_start_s"] / s["t_lb_s"] for s in timed)}


def evaluations(run):
    """[(t, accuracy)] of a run's evaluations since training began."""
    events, _, _ = report.load(RunFolder(run))
    start = report.run_start(events) or 0.0
    return points_of([e for evs in events.values() for e in evs if e["ev"] == "eval"], start)


def overlay_steps(run, model_bytes):
    """[(it, sync, from the last start, t_lb)] from the workers' `iter`
    events, t_lb of the WAN while each synchronization ran."""
    last_start, push, _, _ = per_iteration(run, model_bytes)
    pushed = {it: s for it, s, _ in push}
    return [(it, pushed.get(it), last, bound) for it, last, bound in last_start]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            w.writerow(["" if v is None else f"{v:.6f}" if isinstance(v, float) else v for v in row])


def keep_one(run, setting, dest, steps=None, extra=None):
    """runs/<label>/ of one completed run."""
    os.makedirs(dest, exist_ok=True)
    shutil.copy(os.path.join(run, "summary.json"), os.path.join(dest, "summary.json"))
    with open(os.path.join(dest, "setting.json"), "w") as f:
        json.dump(setting, f, indent=1, sort_keys=True)
    summary = read_json(os.path.join(run, "summary.json"))
    timed = steps(run, summary) if steps else overlay_steps(run, summary.get("model_bytes"))
    write_csv(os.path.join(dest, "iterations.csv"), STEP_COLUMNS, timed)
    write_csv(os.path.join(dest, "evals.csv"), ("t_s", "accuracy"),
              [] if summary.get("programs") else evaluations(run))
    more = extra(run, summary) if extra else None
    if more:
        with open(os.path.join(dest, "extra.json"), "w") as f:
            json.dump(more, f, indent=1, sort_keys=True)


def keep(rows, runs_dir, steps=None, extra=None):
    """The records of every completed run of a sweep, replacing what was
    there; `steps(run, summary)` times a run's iterations when the workers'
    events do not; `extra(run, summary)` gives a dict of anything else the
    recipe's table needs from the run folder."""
    if os.path.isdir(runs_dir):
        shutil.rmtree(runs_dir)
    os.makedirs(runs_dir)
    for r in rows:
        if r.get("status") == "completed":
            keep_one(r["run"], r["setting"], os.path.join(runs_dir, r["label"]), steps, extra)
    with open(os.path.join(runs_dir, "failed.json"), "w") as f:
        json.dump(sorted(({"label": r["label"], "setting": r["setting"]} for r in rows
                          if r.get("status") != "completed"), key=lambda f: f["label"]), f, indent=1)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [{k: float(v) if v != "" else None for k, v in r.items()} for r in csv.DictReader(f)]


def load(runs_dir):
    """([Record] sorted by label, [{label, setting} of each failed run])."""
    records = []
    for label in sorted(os.listdir(runs_dir)):
        folder = os.path.join(runs_dir, label)
        if not os.path.isdir(folder):
            continue
        steps = read_csv(os.path.join(folder, "iterations.csv"))
        for s in steps:
            s["it"] = int(s["it"])
        extra_path = os.path.join(folder, "extra.json")
        records.append(Record(label=label, setting=read_json(os.path.join(folder, "setting.json")),
                              summary=read_json(os.path.join(folder, "summary.json")),
                              evals=[(e["t_s"], e["accuracy"])
                                     for e in read_csv(os.path.join(folder, "evals.csv"))],
                              steps=steps,
                              extra=read_json(extra_path) if os.path.exists(extra_path) else {}))
    failed_path = os.path.join(runs_dir, "failed.json")
    failed = read_json(failed_path) if os.path.exists(failed_path) else []
    return records, failed


def by_seed(kept, split, numbers):
    """{group: {seed: numbers(record)}} of records, where split(setting)
    gives (*group, seed): each setting's runs keyed by the seed they drew."""
    out = {}
    for r in kept:
        *group, seed = split(r.setting)
        out.setdefault(tuple(group), {})[seed] = numbers(r)
    return out


def evals_by(runs_dir, key):
    """{key(setting): [each run's evaluations, [(t, accuracy)]]} of the
    records in runs_dir, for drawing every run's curve by group."""
    out = {}
    for r in load(runs_dir)[0]:
        out.setdefault(key(r.setting), []).append(r.evals)
    return out
