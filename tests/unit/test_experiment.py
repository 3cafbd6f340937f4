import textwrap

import pytest

from testbed import spec as S

BASE = """
datacenters:
  - {name: east, workers: 2, servers: 1}
  - {name: west, workers: 2}
wan:
  - {between: [east, west], bw: 50mbit, delay: 20ms}
experiment:
"""


def load(exp):
    return S.loads(textwrap.dedent(BASE) + textwrap.indent(textwrap.dedent(exp), "  "))


def test_defaults_pick_ssgd_over_the_ps_star_in_the_dc_with_servers():
    e = load("workload: train\n").experiment
    assert (e.sync, e.overlay, e.server_dc, e.model, e.dataset) == ("ssgd", "ps", "east", "mlp", "digits")
    assert (e.max_iterations, e.max_time, e.target_accuracy) == (200, 600.0, 0.0)


def test_units_are_parsed_into_numbers():
    e = load("""
    workload: synthetic
    model: resnet50
    compute_time: 250ms
    chunk: 256kib
    stop: {iterations: 50, time: 2min}
    """).experiment
    assert (e.model, e.compute_time, e.chunk_bytes, e.max_iterations, e.max_time) == \
        ("resnet50", 0.25, 256 * 1024, 50, 120.0)


def test_a_file_without_an_experiment_has_none():
    assert S.loads(textwrap.dedent(BASE).replace("experiment:\n", "")).experiment is None


@pytest.mark.parametrize("exp,path,words", [
    ("sync: fedprox\n", "experiment.sync",
     "unknown sync 'fedprox'; available: esync, fedasync, fedavg, nbsync, ssgd"),
    ("sync: fedasync\noverlay: mlnet\n", "experiment.overlay", "fedasync needs every worker connected straight to the roots, which mlnet does not provide"),
    ("sync: fedavg\nsync_options: {tau: 5}\n", "experiment.sync_options.tau",
     "fedavg has no parameter 'tau' (it has: local_steps)"),
    ("sync: fedavg\nsync_options: {local_steps: 2.5}\n", "experiment.sync_options.local_steps",
     "must be a whole number in 1..100000"),
    ("sync: fedasync\nsync_options: {staleness: linear}\n", "experiment.sync_options.staleness",
     "must be one of constant, polynomial, hinge"),
    ("sync: esync\nsync_options: {epsilon: -1}\n", "experiment.sync_options.epsilon",
     "must be a number in 0.0..3600.0"),
    ("overlay: mesh\n", "experiment.overlay", "unknown overlay 'mesh'"),
    ("server_dc: west\n", "experiment.server_dc", "west has no servers"),
    ("server_dc: mars\n", "experiment.server_dc", "unknown data center 'mars'"),
    ("workload: synthetic\nmodel: lenet\n", "experiment.model", "unknown model 'lenet'"),
    ("model: resnet18\n", "experiment.model",
     "resnet18 has shapes only: it runs a synthetic workload, not train (trainable: cnn, mlp)"),
    ("dataset: mnist\n", "experiment.data_dir", "read from a local folder"),
    ("dataset: mnist\ndata_dir: /nonexistent/mnist\n", "experiment.data_dir", "is not a folder"),
    ("workload: synthetic\nstop: {accuracy: 0.9}\n", "experiment.stop.accuracy", "no accuracy"),
    ("stop: {accuracy: 1.5}\n", "experiment.stop.accuracy", "1.5 must be a number in 0..1"),
    ("stop: {iterations: 0}\n", "experiment.stop.iterations", "whole number"),
    ("stop: {time: 10}\n", "experiment.stop.time", "not a time"),
    ("stop: {epochs: 3}\n", "experiment.stop.epochs", "unknown key"),
    ("batch_size: 0\n", "experiment.batch_size", "whole number in 1..100000"),
    ("lr: fast\n", "experiment.lr", "number"),
    ("chunk: 10b\n", "experiment.chunk", "between 1kib and 1gib"),
    ("sycn: ssgd\n", "experiment.sycn", "did you mean 'sync'"),
    ("partition: skewed\n", "experiment.partition", "unknown partition"),
    ("probe: {pairs: some}\n", "experiment.probe.pairs",
     "unknown probe pairs 'some'; available: all, neighbours"),
    ("probe: {budget: 2%, steady_budget: 5%}\n", "experiment.probe.steady_budget",
     "'5%' must be above 0% and at most the budget"),
    ("probe: {steady_budget: lots}\n", "experiment.probe.steady_budget", "lots"),
])
def test_each_experiment_mistake_names_its_path(exp, path, words):
    with pytest.raises(S.SpecError) as e:
        load(exp)
    assert e.value.path == path
    assert words in str(e.value)


# Speeds: real training can only be slowed down, so a speed above 1 is refused
# there; a synthetic worker sleeps compute_time / speed, so any speed holds.
def train_with(compute="1.0", dynamics=""):
    return textwrap.dedent(BASE).replace("{name: west, workers: 2}", "{name: west, workers: 2, "
                                         f"compute: {compute}}}") + "  workload: train\n" + dynamics


@pytest.mark.parametrize("text,path", [
    (train_with(compute="2"), "datacenters[1].compute"),
    (train_with(dynamics="dynamics: [{at: 1s, worker: west-w0, speed: 1.5}]\n"), "dynamics[0].speed"),
    (train_with(dynamics="dynamics: [{generator: step, dc: west, from: 1, to: 2, at: 5s}]\n"),
     "dynamics[0].to"),
])
def test_a_speed_above_one_is_refused_in_real_training_with_the_reason(text, path):
    with pytest.raises(S.SpecError) as e:
        S.loads(text)
    assert e.value.path == path
    assert "real training cannot run faster than this machine" in str(e.value)


def test_a_list_of_train_speeds_names_the_worker_above_one():
    with pytest.raises(S.SpecError) as e:
        S.loads(train_with(compute="[0.5, 3]"))
    assert e.value.path == "datacenters[1].compute[1]"


def test_synthetic_workers_may_be_faster_than_the_reference():
    doc = textwrap.dedent(BASE).replace("{name: west, workers: 2}", "{name: west, workers: 2, "
                                        "compute: 2}") + "  workload: synthetic\n" + \
        "dynamics: [{at: 1s, worker: west-w0, speed: 4}]\n"
    spec = S.loads(doc)
    assert spec.dc("west").compute == (2.0, 2.0) and spec.dynamics[0].actions(10)[0].speed == 4.0


def test_a_synthetic_worker_at_speed_two_computes_for_half_the_time(monkeypatch):
    from agents import workload as W
    from agents.config import WorkloadSettings
    slept = []
    monkeypatch.setattr(W.time, "sleep", slept.append)
    wl = WorkloadSettings(kind="synthetic", model="flat-10", compute_time=0.3)
    params = W.parameters_for(wl)
    for speed in (1.0, 2.0, 0.5):
        W.workload_of(wl).trainer(0, 1, speed, params).gradients()
    assert slept == [0.3, 0.15, 0.6]


def test_the_steady_budget_is_the_budget_unless_given():
    assert load("probe: {budget: 4%}\n").experiment.probe.budget_when_steady == pytest.approx(0.04)
    probe = load("probe: {budget: 5%, steady_budget: 2%}\n").experiment.probe
    assert (probe.budget, probe.budget_when_steady) == (pytest.approx(0.05), pytest.approx(0.02))
    # A steady budget equal to the budget is one budget throughout, as if unset.
    assert load("probe: {budget: 4%, steady_budget: 4%}\n").experiment.probe == \
        load("probe: {budget: 4%}\n").experiment.probe
