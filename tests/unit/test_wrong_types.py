"""Any value of the wrong type anywhere in topo.yaml is one SpecError naming
a YAML path, never another exception: every node of every shipped topology
(and of one file using every key) is replaced by values of each type."""

import copy
import glob
import os

import pytest
import yaml

from testbed import spec as S
from tests.unit.test_cli import run_testbed

TOPOLOGIES = os.path.join(os.path.dirname(__file__), "..", "..", "topologies")
EVERY_KEY = """
name: every-key
description: each key the format has
preset_bw_scale: 0.1
lan: {bw: 1gbit, delay: 1ms}
datacenters:
  - {name: a, workers: 2, servers: 1, compute: [1.0, 0.5]}
  - {name: b, workers: 1, compute: 0.5}
  - {name: c, workers: 1}
wan:
  - {between: [a, b], bw: 50mbit, delay: 20ms, jitter: 1ms, loss: 1%, queue: 2bdp,
     forward: {bw: 40mbit, delay: 10ms, jitter: 0, loss: 0.01, queue: 100}, reverse: {queue: 256kb}}
  - {preset: aws/Virginia-Frankfurt, between: [b, c]}
experiment:
  {sync: ssgd, overlay: ps, server_dc: a, workload: synthetic, model: flat-1000, partition: iid,
   batch_size: 32, lr: 0.1, momentum: 0.5, compute_time: 100ms, eval_every: 10, seed: 1,
   chunk: 1mib, dead_after: 5s, probe: {period: 2s, budget: 5%, train: 100ms},
   stop: {iterations: 10, time: 1min}}
dynamics:
  - {at: 30s, link: [a, b], bw: 5mbit, delay: 80ms, jitter: 1ms, loss: 1%}
  - {at: 40s, link: [a, b], direction: forward, down: true}
  - {at: 50s, link: [a, b], up: true}
  - {at: 20s, worker: b-w0, speed: 0.3}
  - {trace: traces/step-20-5.csv, link: [a, b], loop: 10s, start: 1s}
  - {generator: square, link: [a, b], low: 5mbit, high: 20mbit, period: 20s, start: 0}
  - {generator: random_walk, link: [b, c], low: 5mbit, high: 50mbit, step: 5mbit, every: 2s,
     seed: 1, initial: 10mbit}
  - {generator: step, dc: b, from: 1.0, to: 0.5, at: 30s}
"""
WRONG = [["x", 1], {"k": "v"}, None, True, 3.5, "x"]
DELETE = object()


def documents():
    docs = [(os.path.basename(f), yaml.safe_load(open(f)), os.path.abspath(f))
            for f in sorted(glob.glob(os.path.join(TOPOLOGIES, "*.yaml")))]
    return docs + [("every-key", yaml.safe_load(EVERY_KEY), os.path.join(TOPOLOGIES, "every-key.yaml"))]


def nodes(node, at=()):
    yield at
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        yield from nodes(child, at + (key,))


def shape(doc, at):
    """`at` with each index of a list's mapping replaced by that mapping's
    keys: the 26 generator entries of a dynamic WAN, all with the same
    keys, are checked through their first (a list's plain values keep
    their index: `between[1]` is looked up after `between[0]`)."""
    out, node = [], doc
    for key in at:
        child = node[key]
        out.append(("keys", tuple(sorted(child))) if isinstance(node, list) and isinstance(child, dict)
                   else key)
        node = child
    return tuple(out)


def changed(doc, at, value):
    if not at:
        return value
    doc = copy.deepcopy(doc)
    parent = doc
    for key in at[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[at[-1]]
    else:
        parent[at[-1]] = value
    return doc


def dump(doc):
    return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))


@pytest.mark.parametrize("name,doc,source", documents(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_wrong_type_anywhere_is_a_spec_error(name, doc, source):
    S.loads(dump(doc), source=source)          # the unchanged file is valid
    tried, shapes = 0, set()
    for at in nodes(doc):
        seen = shape(doc, at)
        if seen in shapes:
            continue
        shapes.add(seen)
        for value in WRONG + ([DELETE] if at else []):
            try:
                result = S.loads(dump(changed(doc, at, value)), source=source)
            except S.SpecError as e:
                assert "\n" not in str(e), (at, value, str(e))
            else:
                assert isinstance(result, S.Spec)
            tried += 1
    assert tried > 50


def test_an_unforeseen_wrong_type_is_an_error_at_the_path_being_checked():
    with pytest.raises(S.SpecError) as e:
        with S.SpecError.at("wan[3].forward", "a mapping of bw, delay"):
            {}[[1]] = 0                       # TypeError: unhashable type: 'list'
    assert (e.value.path, e.value.message) == \
        ("wan[3].forward", "a value of the wrong type: expected a mapping of bw, delay")


BASE = """
datacenters: [{name: a, workers: 1, servers: 1}, {name: b, workers: 1}]
wan: [{between: [a, b], bw: 10mbit}]
experiment: {workload: synthetic}
"""


@pytest.mark.parametrize("text,path", [
    (BASE.replace("between: [a, b]", "between: [[a], b]"), "wan[0].between[0]"),
    (BASE.replace("between: [a, b]", "between: [{a: 1}, b]"), "wan[0].between[0]"),
    (BASE + "dynamics: [{at: 1s, link: [[a], b], bw: 1mbit}]\n", "dynamics[0].link"),
    (BASE + "dynamics: [{at: 1s, dc: [a], speed: 0.5}]\n", "dynamics[0].dc"),
    (BASE + "dynamics: [{at: 1s, worker: {a: 1}, speed: 0.5}]\n", "dynamics[0].worker"),
    (BASE + "dynamics: [{trace: [x], link: [a, b]}]\n", "dynamics[0].trace"),
    (BASE.replace("workload: synthetic", "workload: synthetic, data_dir: [x]"), "experiment.data_dir"),
    (BASE.replace("bw: 10mbit", "bw: 10mbit, preset: [aws]"), "wan[0].preset"),
    ("? [a]\n: 1\n", ""),
])
def test_a_list_where_a_name_belongs_is_one_line_naming_the_path_and_exit_2(tmp_path, text, path):
    f = tmp_path / "topo.yaml"
    f.write_text(text)
    r = run_testbed("validate", str(f))
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"error: {f}: {path}: " if path else f"error: {f}: ")


@pytest.mark.parametrize("data", [b"\xff\xfe", b"a: 1\n" * 300_000])
def test_a_topology_that_is_binary_or_huge_is_refused_in_one_line(tmp_path, data):
    f = tmp_path / "topo.yaml"
    f.write_bytes(data)
    with pytest.raises(S.SpecError, match="is not UTF-8 text|is not a text file|KiB; it must be smaller"):
        S.load(str(f))


def test_an_endless_device_is_not_read_forever():
    with pytest.raises(S.SpecError, match="is a device, not a text file"):
        S.load("/dev/zero")


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "topo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(S.SpecError, match="is a named pipe, not a text file"):
        S.load(str(fifo))
