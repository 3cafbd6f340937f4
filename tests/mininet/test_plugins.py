"""A user's plug-ins on the real emulated WAN: the example package
installed into the testbed's virtualenv and run by its entry points'
names; a scheme named by a file beside the topology, run as root without
installing anything or setting PYTHONPATH; and a BatchNorm model whose
running statistics end the same on every worker, its logged accuracy that
of its final weights evaluated alone."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from agents.events import read_events
from tests.mininet.helpers import ROOT, run_topology

pytestmark = pytest.mark.mininet
EXAMPLES = os.path.join(ROOT, "examples", "geo-testbed-examples")
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")
ITERATIONS = 8


def topology(experiment):
    """The quickstart, a server in every DC, short, with `experiment`'s lines
    in place of its sync and overlay."""
    text = open(QUICKSTART).read()
    text = text.replace("  sync: ssgd\n  overlay: ps\n", experiment)
    text = text.replace("stop: {accuracy: 0.9, iterations: 400, time: 3min}",
                        f"stop: {{iterations: {ITERATIONS}, time: 3min}}")
    for dc in ("frankfurt", "tokyo"):
        text = text.replace(f"{{name: {dc}, workers: 2}}", f"{{name: {dc}, workers: 2, servers: 1}}")
    assert experiment in text
    return text


def events(run, agent):
    return read_events(os.path.join(run, "agents", f"{agent}.jsonl"))


def digests(run):
    return {e["model"] for dc in ("virginia", "frankfurt", "tokyo") for w in (0, 1)
            for e in events(run, f"{dc}-w{w}") if e["ev"] == "done"}


@pytest.fixture
def examples_installed():
    pip = [sys.executable, "-m", "pip"]
    r = subprocess.run(pip + ["install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                              EXAMPLES], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    try:
        yield
    finally:
        subprocess.run(pip + ["uninstall", "-q", "-y", "geo-testbed-examples"], capture_output=True)


def test_the_installed_example_package_runs_its_scheme_overlay_and_batchnorm_model(tmp_path,
                                                                                    examples_installed):
    text = topology("  sync: local-momentum\n  sync_options: {local_steps: 2, beta: 0.5}\n"
                    "  overlay: regional-ps\n  overlay_options: {regions: [[frankfurt, tokyo]]}\n")
    text = text.replace("model: mlp", "model: bn-cnn\n  model_options: {width: 4}")
    run, summary = run_topology(tmp_path, "examples", text)
    assert summary["iterations"] == ITERATIONS
    # One model on every worker, BatchNorm's running statistics included.
    assert len(digests(run)) == 1
    # The plan is the regional one: tokyo's workers sum at frankfurt's server, which sends one sum.
    (plan,) = [e["plan"] for e in events(run, "virginia-s0") if e["ev"] == "plan"]
    assert plan["pieces"][0]["parent"]["tokyo-w0"] == "frankfurt-s0"
    assert plan["pieces"][0]["parent"]["frankfurt-s0"] == "virginia-s0"
    recorded = {p["kind"]: p for p in json.load(open(os.path.join(run, "plugins.json")))}
    assert recorded["sync"]["module"] == "geo_testbed_examples.sync" and not recorded["sync"]["builtin"]
    assert recorded["model"]["attribute"] == "BatchNormCNN" and len(recorded["model"]["sha256"]) == 64
    check_the_final_model_evaluates_as_logged(run)


def test_a_batchnorm_model_over_the_star_ends_with_one_model_and_evaluates_as_logged(
        tmp_path, examples_installed):
    # SSGD: the roots step the parameters and average the workers' running statistics.
    text = topology("  sync: ssgd\n  overlay: ps\n").replace(
        "model: mlp", "model: bn-cnn\n  model_options: {width: 4}")
    run, summary = run_topology(tmp_path, "star", text)
    assert summary["iterations"] == ITERATIONS and len(digests(run)) == 1
    check_the_final_model_evaluates_as_logged(run)


def check_the_final_model_evaluates_as_logged(run):
    """The accuracy rank 0 logged at the end is its final model's, evaluated
    alone in eval mode on the same test set."""
    import importlib

    import torch

    from agents.models import dataset_named
    from agents.workload import evaluate
    importlib.invalidate_caches()            # installed after this interpreter started
    from geo_testbed_examples.model import BatchNormCNN

    saved = np.load(os.path.join(run, "agents", "virginia-w0.model.npz"))
    means = [k for k in saved.files if "running_mean" in k]
    # The statistics moved from their start (mean 0) with the workers' batches.
    assert means and all(np.abs(saved[k]).max() > 0 for k in means)
    x_train, y_train, x_test, y_test = dataset_named("digits").load("")
    module = BatchNormCNN({"width": 4}).build(x_train.shape[1:], 10, 0)
    module.load_state_dict({k: torch.from_numpy(saved[k]) for k in saved.files}, strict=False)
    alone = evaluate(module, x_test, y_test, torch.nn.CrossEntropyLoss())
    last = [e for e in events(run, "virginia-w0") if e["ev"] == "eval"][-1]
    assert last["it"] == ITERATIONS
    assert alone["accuracy"] == last["accuracy"]
    assert alone["loss"] == pytest.approx(last["loss"], rel=1e-6)


def test_a_scheme_in_a_file_beside_the_topology_runs_as_root_without_installing_it(tmp_path):
    shutil.copy(os.path.join(EXAMPLES, "geo_testbed_examples", "sync.py"), tmp_path / "my_sync.py")
    text = topology("  sync: ./my_sync.py:LocalSGDServerMomentum\n  sync_options: {local_steps: 2}\n"
                    "  overlay: ps\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    topo = tmp_path / "mine.yaml"
    topo.write_text(text)
    r = subprocess.run([sys.executable, "-m", "testbed.cli", "run", str(topo), "--runs",
                        str(tmp_path / "runs")], capture_output=True, text=True, timeout=400, env=env,
                       cwd="/")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (run,) = [os.path.join(tmp_path / "runs", d) for d in os.listdir(tmp_path / "runs")]
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["iterations"] == ITERATIONS and len(digests(run)) == 1
    (mine,) = [p for p in json.load(open(os.path.join(run, "plugins.json"))) if p["kind"] == "sync"]
    assert mine["file"] == str(tmp_path / "my_sync.py")
    assert mine["sha256"] == __import__("hashlib").sha256(open(tmp_path / "my_sync.py", "rb").read()).hexdigest()


@pytest.mark.parametrize("line,words", [
    ("  sync: ./my_sync.py:LocalSGDServerMomentum\n  sync_options: {beta: 2}\n  overlay: ps\n",
     "experiment.sync_options.beta: 2 must be a number in 0.0..0.999"),
    ("  sync: ./broken.py:Scheme\n  overlay: ps\n",
     "cannot be imported: NameError: name 'undefined_name' is not defined"),
    ("  sync: ./lacking.py:Scheme\n  overlay: ps\n", "lacks the required hook work"),
])
def test_validate_refuses_a_bad_plug_in_in_one_sentence(tmp_path, line, words):
    shutil.copy(os.path.join(EXAMPLES, "geo_testbed_examples", "sync.py"), tmp_path / "my_sync.py")
    (tmp_path / "broken.py").write_text("undefined_name\n")
    (tmp_path / "lacking.py").write_text("from agents.sync.base import SyncScheme\n"
                                         "class Scheme(SyncScheme):\n    NAME = 'lacking'\n")
    (tmp_path / "t.yaml").write_text(topology(line))
    r = subprocess.run([sys.executable, "-m", "testbed.cli", "validate", str(tmp_path / "t.yaml")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr
