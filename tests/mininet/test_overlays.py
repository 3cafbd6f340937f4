"""Every overlay trains the quickstart over the real emulated WAN to the
star's accuracy: the same SSGD arithmetic, only where the sums are made
differs.  The roots check that every piece of every iteration held exactly
N contributions (a run that did not would fail)."""

import json
import os
import subprocess

import pytest

from agents.events import read_events
from tests.mininet.helpers import ROOT, cli_argv

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")
ITERATIONS = 60


def train(tmp_path, overlay, servers_everywhere=False):
    text = open(QUICKSTART).read()
    text = text.replace("overlay: ps", f"overlay: {overlay}")
    text = text.replace("stop: {accuracy: 0.9, iterations: 400, time: 3min}",
                        f"stop: {{iterations: {ITERATIONS}, time: 4min}}")
    if servers_everywhere:
        text = text.replace("{name: frankfurt, workers: 2}", "{name: frankfurt, workers: 2, servers: 1}")
    topo = tmp_path / f"{overlay}.yaml"
    topo.write_text(text)
    runs = tmp_path / f"runs-{overlay}"
    r = subprocess.run(cli_argv("run", str(topo), "--runs", str(runs)), capture_output=True,
                       text=True, timeout=400)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (name,) = os.listdir(runs)
    run = os.path.join(runs, name)
    return run, json.load(open(os.path.join(run, "summary.json")))


def events(run, agent):
    return read_events(os.path.join(run, "agents", f"{agent}.jsonl"))


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    return train(tmp_path_factory.mktemp("star"), "ps")


def test_mlnet_aggregates_in_the_wan_and_matches_the_stars_accuracy(tmp_path, star):
    run, summary = train(tmp_path, "mlnet", servers_everywhere=True)
    assert summary["iterations"] == ITERATIONS
    assert abs(summary["final_accuracy"] - star[1]["final_accuracy"]) <= 0.01
    (plan,) = [e["plan"] for e in events(run, "virginia-s0") if e["ev"] == "plan"]
    (piece,) = plan["pieces"]
    # Frankfurt's server sums its DC's workers (and tokyo's subtree, if tokyo hangs below it).
    assert piece["parent"]["frankfurt-w0"] == piece["parent"]["frankfurt-w1"] == "frankfurt-s0"
    # It took in its two workers' gradients and sent one sum up, every iteration.
    (done,) = [e for e in events(run, "frankfurt-s0") if e["ev"] == "done"]
    model = summary["model_bytes"]
    assert done["iterations"] == ITERATIONS
    assert done["bytes_in"] >= ITERATIONS * (2 * model + model)       # two gradients + new model
    assert done["bytes_out"] >= ITERATIONS * (model + 2 * model)      # one sum + model to two
    agg = [e for e in events(run, "virginia-s0") if e["ev"] == "aggregate"]
    assert len(agg) == ITERATIONS and all(e["contributions"] == 6 for e in agg)


def test_tsengine_schedules_every_transfer_and_matches_the_stars_accuracy(tmp_path, star):
    run, summary = train(tmp_path, "tsengine")
    assert summary["iterations"] == ITERATIONS
    assert abs(summary["final_accuracy"] - star[1]["final_accuracy"]) <= 0.01
    decisions = [e for e in events(run, "virginia-c") if e["ev"] == "decision"]
    for kind in ("pair", "distribute"):
        per_round = {}
        for d in decisions:
            if d["decision"] == kind:
                per_round.setdefault(d["it"], []).append(d["sender"])
        # Each of the 6 workers sent its partial sum once and got the model once per round.
        assert sorted(per_round) == list(range(ITERATIONS)), kind
        assert all(len(senders) == 6 for senders in per_round.values()), kind
    # Workers relayed to each other: the tree is not the star.
    assert any(d["decision"] == "distribute" and d["sender"] != "virginia-s0" for d in decisions)
    assert any(d["decision"] == "pair" and d["receiver"] != "virginia-s0" for d in decisions)
