"""How soon training begins: agents forked by the launcher against one
interpreter per agent, in one run.

Runs the same experiment twice, 4 data centers of 4 workers and 1 server
each (20 agents, and the coordinator), training the MLP on digits for a
few iterations: once with the agents forked by the launcher (one
interpreter that imported torch once), once with each agent started as an
interpreter of its own through Mininet's popen.  For each it prints the
seconds from the run's start (the runner's `starting` event in
runner.jsonl, before the launcher starts and the network is built: the
launcher's imports overlap with the build) to the start of the first
iteration: the moment the last worker logs `start`, which a worker does
right before it computes its first gradient (under SSGD no iteration ends
before every worker has begun it).  Then the ratio of the two.  Times are CLOCK_MONOTONIC, the
same in every namespace.

    sudo .venv/bin/python benchmarks/agent_start.py [--iterations 5] [--runs DIR]
"""

import argparse
import itertools
import os
import sys
import tempfile

from agents.events import read_events
from testbed import spec as specmod
from testbed.analysis import report
from testbed.run import runner

DCS = ("virginia", "frankfurt", "tokyo", "sydney")
WORKERS_PER_DC = 4


def topology(path, iterations):
    dcs = "\n".join(f"  - {{name: {dc}, workers: {WORKERS_PER_DC}, servers: 1}}" for dc in DCS)
    wan = "\n".join(f"  - {{between: [{a}, {b}], bw: 50mbit, delay: 10ms}}"
                    for a, b in itertools.pairwise(DCS))
    with open(path, "w") as f:
        f.write(f"""name: agent-start
datacenters:
{dcs}
wan:
{wan}
experiment:
  sync: ssgd
  overlay: ps
  server_dc: {DCS[0]}
  workload: train
  model: mlp
  dataset: digits
  eval_every: 1000
  stop: {{iterations: {iterations}, time: 5min}}
""")
    return specmod.load(path)


def start_delay(folder):
    """Seconds from the run's start to the last worker's `start`."""
    started = sum(1 for name in folder.agent_names() for e in read_events(folder.agent_file(name, "jsonl"))
                  if e["ev"] == "start" and e.get("role") == "worker")
    if started != len(DCS) * WORKERS_PER_DC:
        raise SystemExit(f"error: only {started} workers started in {folder.path}")
    return report.summarize(folder)["agents_ready"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--runs", default=None, help="keep the run folders here (default: a temporary folder)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("error: the benchmark builds a Mininet network: run it as root", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.runs or tmp
        spec = topology(os.path.join(tmp, "agent-start.yaml"), args.iterations)
        agents = len(DCS) * (WORKERS_PER_DC + 1)
        delays = {}
        for mode in ("launcher", "popen"):
            outcome = runner.run(spec, runs, show=lambda line: None, say=lambda line: None,
                                 agent_start=mode)
            if outcome.status != "completed":
                print(f"error: the {mode} run failed: {outcome.reason}", file=sys.stderr)
                return 1
            delays[mode] = start_delay(outcome.folder)
            print(f"{mode:8s}: first iteration starts {delays[mode]:5.1f} s after the run starts "
                  f"({agents} agents + coordinator, {os.cpu_count()} cores)", flush=True)
        print(f"ratio popen / launcher: {delays['popen'] / delays['launcher']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
