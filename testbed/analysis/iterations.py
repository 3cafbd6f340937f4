"""Each synchronization of a finished run against the lower bound of the WAN
as it was while that synchronization ran (testbed/bounds/timeline.py), read
from the run's folder: what a recipe pools over iterations, runs and draws."""

import glob
import json
import os

from agents.events import read_events
from testbed.bounds.timeline import bounds_per_iteration


def agent_events(run, role_suffix):
    """Every event of the agents whose name ends in `role_suffix` (-w0, -c)."""
    return [e for f in sorted(glob.glob(os.path.join(run, "agents", f"*{role_suffix}.jsonl")))
            for e in read_events(f)]


def iters_of(run):
    """The `iter` events of every DC's first worker."""
    return [e for e in agent_events(run, "-w0") if e["ev"] == "iter"]


def per_iteration(run, model_bytes):
    """([(it, sync, t_lb)] timed from the last start, the same timed push to
    pull, the run's spec, its link changes): t_lb of the WAN while each
    synchronization ran."""
    spec = json.load(open(os.path.join(run, "spec.json")))
    links = os.path.join(run, "links.jsonl")
    changes = read_events(links) if os.path.exists(links) else []
    iters = iters_of(run)
    cache = {}                  # both counts meet mostly the same WAN states
    return (bounds_per_iteration(spec, changes, iters, model_bytes, from_last_start=True, cache=cache),
            bounds_per_iteration(spec, changes, iters, model_bytes, cache=cache), spec, changes)


def steady_ratios(rows):
    """[(it, sync, t_lb)] of the iterations after the first (which also opens
    connections) that have a bound."""
    return [(it, s, b) for it, s, b in rows if it > 0 and b]
