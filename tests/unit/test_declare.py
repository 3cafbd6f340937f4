"""The declarations of topo.yaml's keys are what the parsers use: a file
that sets nothing gets the declared defaults, and a value outside a
declared range is refused in the kit's words."""

import pytest

from testbed import spec as S
from testbed.spec import experiment, search, topology
from testbed.spec.declare import Key, Section

BASE = """
datacenters: [{name: a, workers: 2, servers: 1}, {name: b, workers: 1}]
wan: [{between: [a, b], bw: 10mbit}]
"""


def declared(section, name):
    key = section[name]
    return key.check(key.default, section.path)


def test_a_file_that_sets_nothing_gets_every_declared_default():
    spec = S.loads(BASE + "experiment: {probe: true}\n")
    exp = spec.experiment
    for name, attr in [("batch_size", "batch_size"), ("lr", "lr"), ("momentum", "momentum"),
                       ("eval_every", "eval_every"), ("seed", "seed"), ("chunk", "chunk_bytes"),
                       ("dead_after", "dead_after"), ("compute_time", "compute_time"),
                       ("coordination", "coordination"), ("partition", "partition"),
                       ("optimizer", "optimizer"), ("weight_decay", "weight_decay"), ("loss", "loss"),
                       ("sync", "sync"), ("overlay", "overlay"), ("workload", "workload"),
                       ("dataset", "dataset")]:
        key = experiment.EXPERIMENT[name]
        value = key.default if key.kind == "plugin" else declared(experiment.EXPERIMENT, name)
        assert getattr(exp, attr) == value, name
    assert exp.model == experiment.TRAIN_MODEL
    assert (exp.max_iterations, exp.max_time, exp.target_accuracy) == tuple(
        declared(experiment.STOP, k) for k in ("iterations", "time", "accuracy"))
    assert (exp.probe.period, exp.probe.budget, exp.probe.train_time, exp.probe.pairs) == tuple(
        declared(experiment.PROBE, k) for k in ("period", "budget", "train", "pairs"))
    assert spec.lan.rate == declared(topology.LAN, "bw") and spec.lan.delay == declared(topology.LAN, "delay")
    ab = spec.wan[0].ab
    assert (ab.delay, ab.jitter, ab.loss, ab.queue_bdp) == (0, 0, 0, 1.0)
    assert spec.datacenters[0].compute == (topology.DATACENTER["compute"].default,) * 2


def test_a_search_that_sets_nothing_gets_every_declared_default():
    spec = S.loads(BASE.replace("workers: 2, servers: 1", "workers: 3, servers: 1") + "search: {}\n")
    params = spec.search.params
    for name in ("tasks", "configs", "eta", "iterations", "workers", "scale", "task_gap", "seed"):
        assert getattr(params, name) == declared(search.SEARCH, name), name
    assert spec.search.policy == search.SEARCH["policy"].default
    assert spec.search.chunk_bytes == declared(search.SEARCH, "chunk")
    assert spec.search.max_time == declared(search.SEARCH_STOP, "time")


@pytest.mark.parametrize("key,value,message", [
    (Key("n", "whole", "", low=1, high=10), 11, "11 must be a whole number in 1..10"),
    (Key("x", "number", "", low=0, high=1, above=True), 0, "0 must be a number in (0, 1]"),
    (Key("t", "time", "", above=True), 0, "0 must be above zero"),
    (Key("t", "time", "", high=1.0), "2s", "'2s': must be between 0 and 1s"),
    (Key("b", "share", "", low=0.0, high=0.5), "60%", "'60%' must be above 0% and at most 50%"),
    (Key("w", "word", "", choices=("all", "neighbours"), what="probe pairs"), "nieghbours",
     "unknown probe pairs 'nieghbours'; did you mean 'neighbours'?"),
    (Key("f", "flag", ""), "yes", "'yes' is not true or false"),
    (Key("d", "text", "", what="a folder name"), 3, "3 is not a folder name"),
])
def test_a_key_refuses_a_value_outside_its_declaration_in_one_sentence(key, value, message):
    with pytest.raises(S.SpecError) as e:
        key.check(value, "here")
    assert (e.value.path, e.value.message) == ("here", message)


def test_a_section_refuses_a_key_it_does_not_declare_and_names_the_close_one():
    section = Section("lan", "", [Key("bw", "rate", ""), Key("delay", "time", "")])
    with pytest.raises(S.SpecError) as e:
        section.check_keys({"dealy": 1}, "lan")
    assert str(e.value) == "lan.dealy: unknown key; did you mean 'delay'?"
    with pytest.raises(ValueError):
        Section("x", "", [Key("a", "flag", ""), Key("a", "flag", "")])
