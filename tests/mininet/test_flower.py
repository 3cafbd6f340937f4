"""The Flower example (examples/programs/flower) as it is, for two rounds:
the SuperLink on the server in virginia, a SuperNode on the worker in each
of virginia, frankfurt and tokyo, FedAvg of a NumPy MLP on digits."""

import json
import os
import shutil

import pytest

from agents.planning.wan import GOODPUT_SHARE
from tests.mininet.helpers import ROOT, run_topology

pytestmark = pytest.mark.mininet
FLOWER = os.path.join(ROOT, "examples", "programs", "flower")
ROUNDS = 2


def processes_of(run):
    """Pids of the processes whose environment names this run folder."""
    marker = f"TESTBED_RUN={run}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.timeout(600)
def test_flower_fedavg_runs_two_rounds_to_the_end_and_the_model_crosses_the_wan_both_ways(tmp_path):
    app = tmp_path / "flower"
    shutil.copytree(FLOWER, app, ignore=shutil.ignore_patterns("__pycache__"))
    text = (app / "flower.yaml").read_text()
    assert "num-server-rounds=3" in text
    run, summary = run_topology(app, "flower", text.replace("num-server-rounds=3",
                                                            f"num-server-rounds={ROUNDS}"))
    # Every program ended by itself once the rounds were done.
    assert summary["status"] == "completed" and summary["stopped_by"] == "programs", summary["reason"]
    assert [(p["host"], p["code"]) for p in summary["programs"]] == [
        ("virginia-s0", 0), ("virginia-w0", 0), ("frankfurt-w0", 0), ("tokyo-w0", 0)]
    assert processes_of(run) == []

    lines = [json.loads(line) for line in open(os.path.join(run, "programs", "metrics.jsonl"))]
    server = [m for m in lines if m["host"] == "virginia-s0"]
    # Each round's global evaluation and the nodes' aggregated one, as they happened.
    assert [m["round"] for m in server if "test_accuracy" in m] == list(range(ROUNDS + 1))
    assert [m["round"] for m in server if "nodes_eval_accuracy" in m] == list(range(1, ROUNDS + 1))
    assert summary["metrics"]["virginia-s0"]["test_accuracy"] > 0.8
    assert summary["metrics"]["virginia-s0"]["flower_status"] == "finished:completed"
    # Every SuperNode trained in every round, on a third of the training split.
    for host in ("virginia-w0", "frankfurt-w0", "tokyo-w0"):
        trained = [m for m in lines if m["host"] == host and "train_loss" in m]
        assert [m["round"] for m in trained] == list(range(1, ROUNDS + 1)), host
        assert all(m["examples"] in (479, 480) for m in trained), trained

    # Per round the SuperLink sends the model to every SuperNode twice (to
    # train, then to evaluate) and each sends its trained model back once;
    # Flower's HTTP requests, polls and heartbeats add a little.  So the
    # directions from virginia to each worker DC carry 2 x ROUNDS models,
    # the reverse ones ROUNDS, and frankfurt-tokyo, on no SuperNode's path
    # to the SuperLink, next to nothing.
    model = summary["metrics"]["virginia-s0"]["model_bytes"]
    payload = {k: w["bytes"] * GOODPUT_SHARE for k, w in summary["wan"].items()}
    for dc in ("frankfurt", "tokyo"):
        down, up = payload[f"virginia->{dc}"], payload[f"{dc}->virginia"]
        assert 2 * ROUNDS * model <= down <= 1.5 * 2 * ROUNDS * model, (dc, down, model)
        assert ROUNDS * model <= up <= 1.5 * ROUNDS * model, (dc, up, model)
    assert payload["frankfurt->tokyo"] < 0.1 * model and payload["tokyo->frankfurt"] < 0.1 * model
