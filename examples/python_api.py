"""The testbed from Python: an experiment built as a dict, a key overridden
with validation, a run, and its records as pandas DataFrames.

    sudo .venv/bin/python examples/python_api.py [--runs DIR]

It needs root, as `testbed run` does.  The last line it prints is a JSON
object of what it read, so a script (or the test that runs this file) can
check it.  The same works line by line in a notebook.
"""

import argparse
import json
import os

import testbed

# Three DCs, a server in virginia and two workers in each DC: the quickstart's
# shape, written inline instead of in a topo.yaml.
EXPERIMENT = {
    "name": "python-api",
    "datacenters": [
        {"name": "virginia", "servers": 1, "workers": 2},
        {"name": "frankfurt", "workers": 2},
        {"name": "tokyo", "workers": 2},
    ],
    "wan": [
        {"between": ["virginia", "frankfurt"], "bw": "50mbit", "delay": "20ms"},
        {"between": ["virginia", "tokyo"], "bw": "20mbit", "delay": "40ms"},
        {"between": ["frankfurt", "tokyo"], "bw": "30mbit", "delay": "30ms"},
    ],
    "experiment": {
        "sync": "ssgd", "overlay": "ps", "model": "mlp", "dataset": "digits",
        "stop": {"iterations": 12, "time": "2min"},
        "eval_every": 4,
    },
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="results/runs", help="where the run folder goes")
    args = parser.parse_args()

    exp = testbed.Experiment.from_dict(EXPERIMENT, name="python-api")
    # An override is validated as topo.yaml is: a bad value is refused here,
    # with the YAML path in the message, before anything runs.
    try:
        exp.with_(experiment={"lr": -1})
    except testbed.SpecError as e:
        print("refused:", e)
    exp = exp.with_(experiment={"lr": 0.05})

    run = exp.run(runs_root=args.runs)
    iterations, evaluations = run.iterations(), run.evaluations()
    summary = run.summary
    print(f"{run.path}: {run.status}, final accuracy {summary.get('final_accuracy')}")
    print(iterations.groupby("agent").sync.mean().rename("mean sync seconds").to_string())

    print(json.dumps({
        "status": run.status,
        "lr": json.load(open(os.path.join(run.path, "spec.json")))["experiment"]["lr"],
        "iterations": summary.get("iterations"),
        "rounds": int(iterations.groupby("agent").it.max().min()) + 1,
        "workers": int(iterations.agent.nunique()),
        "summary_workers": summary.get("workers"),
        "final": summary.get("final_accuracy"),
        "last_eval": float(evaluations.sort_values("t").accuracy.iloc[-1]),
        "links_rows": len(run.links()),
        "cpu_rows": len(run.cpu()),
    }))


if __name__ == "__main__":
    main()
