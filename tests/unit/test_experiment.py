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
    ("sync: fedprox\n", "experiment.sync", "unknown sync 'fedprox'; available: ssgd"),
    ("overlay: mesh\n", "experiment.overlay", "unknown overlay 'mesh'"),
    ("server_dc: west\n", "experiment.server_dc", "west has no servers"),
    ("server_dc: mars\n", "experiment.server_dc", "unknown data center 'mars'"),
    ("workload: synthetic\nmodel: mlp\n", "experiment.model", "unknown model 'mlp'"),
    ("model: resnet18\n", "experiment.model", "unknown model 'resnet18'"),
    ("dataset: mnist\n", "experiment.data_dir", "read from a local folder"),
    ("dataset: mnist\ndata_dir: /nonexistent/mnist\n", "experiment.data_dir", "is not a folder"),
    ("workload: synthetic\nstop: {accuracy: 0.9}\n", "experiment.stop.accuracy", "no accuracy"),
    ("stop: {accuracy: 1.5}\n", "experiment.stop.accuracy", "between 0 and 1"),
    ("stop: {iterations: 0}\n", "experiment.stop.iterations", "whole number"),
    ("stop: {time: 10}\n", "experiment.stop.time", "not a time"),
    ("stop: {epochs: 3}\n", "experiment.stop.epochs", "unknown key"),
    ("batch_size: 0\n", "experiment.batch_size", "whole number in 1..100000"),
    ("lr: fast\n", "experiment.lr", "number"),
    ("chunk: 10b\n", "experiment.chunk", "between 1kib and 1gib"),
    ("sycn: ssgd\n", "experiment.sycn", "did you mean 'sync'"),
    ("partition: skewed\n", "experiment.partition", "unknown partition"),
])
def test_each_experiment_mistake_names_its_path(exp, path, words):
    with pytest.raises(S.SpecError) as e:
        load(exp)
    assert e.value.path == path
    assert words in str(e.value)
