"""`testbed schema`'s JSON Schema of topo.yaml: every shipped topology and
recipe base passes it, and for every key of every section the values the
validator refuses that a schema can express (a wrong type, a number out of
range, a word not among the choices, a quantity without its unit, an
unknown key) are refused by the schema too.  The docs' example of checking
a file with check-jsonschema is run as written."""

import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import jsonschema
import pytest
import yaml

from testbed import spec as S
from testbed.docs import pages
from testbed.docs.topo_yaml import CHECK_EXAMPLE, EXAMPLE
from testbed.spec import dynamics, experiment, programs, topology
from testbed.spec.schema import schema
from testbed.spec.units import parse_size
from tests.unit.test_wrong_types import EVERY_KEY

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(ROOT, "topologies", "probe.yaml")      # where traces/ are found
VALIDATOR = jsonschema.Draft202012Validator(schema())

TRAIN = """
datacenters:
  - {name: virginia, workers: 2, servers: 1}
  - {name: tokyo, workers: 2, servers: 1}
wan:
  - {between: [virginia, tokyo], bw: 20mbit, delay: 40ms, forward: {bw: 10mbit}}
lan: {bw: 1gbit}
tcp: {slow_start_after_idle: false}
experiment:
  overlay: mlnet
  overlay_options: {k: 2}
  stop: {iterations: 10}
  probe: {budget: 5%}
  lr_schedule: {kind: step, every: 10}
dynamics:
  - {at: 30s, link: [virginia, tokyo], bw: 5mbit}
"""
SEARCH = """
datacenters:
  - {name: cluster, servers: 2, workers: 4}
  - {name: office, workers: 1}
wan:
  - {between: [cluster, office], bw: 10mbit, delay: 10ms}
search: {policy: sincronia, policy_options: {reorder: arrivals}, stop: {time: 2min}}
"""
COMMAND = """
datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
wan: [{between: [east, west], bw: 20mbit, delay: 10ms}]
experiment:
  workload: command
  programs: [{hosts: [east-w0], command: "iperf3 -s -1", env: {A: "1"}}, {hosts: west, command: "true"}]
  master_port: 29500
  user: root
"""
# A dynamics entry that takes each key, so a bad value of the key is met.
ENTRIES = {
    "at-link": {"at": "30s", "link": ["virginia", "tokyo"], "bw": "5mbit"},
    "at-worker": {"at": "20s", "worker": "tokyo-w0", "speed": 0.3},
    "at-dc": {"at": "20s", "dc": "tokyo", "speed": 0.3},
    "trace": {"trace": "traces/step-20-5.csv", "link": ["virginia", "tokyo"], "loop": True},
    "step": {"generator": "step", "dc": "tokyo", "from": 1.0, "to": 0.5, "at": "30s"},
    "square": {"generator": "square", "link": ["virginia", "tokyo"], "low": "5mbit", "high": "20mbit",
               "period": "20s"},
    "random_walk": {"generator": "random_walk", "link": ["virginia", "tokyo"], "low": "5mbit",
                    "high": "50mbit", "step": "5mbit", "every": "2s", "seed": 1, "initial": "10mbit"},
}
ENTRY_OF = {"worker": "at-worker", "dc": "at-dc", "speed": "at-worker", "trace": "trace", "loop": "trace",
            "start": "trace", "from": "step", "to": "step", "period": "square"}
for _key in ("generator", "low", "high", "step", "every", "seed", "initial"):
    ENTRY_OF[_key] = "random_walk"


def where(section, key=None):
    """(document, the path to the mapping that holds `section`'s keys)."""
    if section.path.startswith("search"):
        doc = yaml.safe_load(SEARCH)
    elif section is programs.PROGRAM or (section is experiment.EXPERIMENT
                                         and key in experiment.PROGRAMS_ONLY):
        doc = yaml.safe_load(COMMAND)
    else:
        doc = yaml.safe_load(TRAIN)
    paths = {"": (), "datacenters[]": ("datacenters", 0), "wan[]": ("wan", 0),
             "wan[].forward, wan[].reverse": ("wan", 0, "forward"), "lan": ("lan",), "tcp": ("tcp",),
             "experiment": ("experiment",), "experiment.stop": ("experiment", "stop"),
             "experiment.probe": ("experiment", "probe"),
             "experiment.lr_schedule": ("experiment", "lr_schedule"),
             "experiment.programs[]": ("experiment", "programs", 0),
             "search": ("search",), "search.stop": ("search", "stop"), "dynamics[]": ("dynamics", 0)}
    if section is dynamics.ENTRY:
        doc["dynamics"][0] = copy.deepcopy(ENTRIES[ENTRY_OF.get(key, "at-link")])
    return doc, paths[section.path]


def with_value(section, key, value):
    doc, at = where(section, key)
    node = doc
    for step in at:
        node = node[step]
    node[key] = value
    return doc


def refused_by_validator(doc):
    try:
        S.loads(yaml.safe_dump(doc), source=SOURCE)
    except S.SpecError:
        return True
    return False


def refused_by_schema(doc):
    return not VALIDATOR.is_valid(doc)


def bad_values(key):
    """Values of a key's kind and declaration the validator refuses and a
    schema can tell."""
    kind, low, high = key.kind, key.low, key.high
    out = {"whole": ["x", 1.5, True], "number": ["x", True], "speed": ["fast", True, 0, -1],
           "time": ["x", "5 parsecs", 40], "size": ["x", -1, "5 parsecs"],
           "rate": ["50 mbps", "fast", 50 if key.alt is None else 101],     # 50: a speed, where one may be
           "loss": [1.5, -0.1, "x", "1 %%"], "share": [0, 0.9, "x"], "word": ["nonesuch", 3],
           "flag": ["yes", 1], "text": [3, ["x"]], "name": ["Bad Name!", 3, "a" * 16],
           "pair": [["virginia"], "virginia", [1, 2]], "queue": [1, 200_000, "x", "2 bdps"],
           "plugin": [3, ""], "options": ["x", 3], "models": [{}, {"a": 0}, "x"],
           "hosts": [3, [1], {"a": 1}], "env": ["x", {"A": True}, {"A": [1]}],
           "mapping": ["x", 3, {"nonesuch": 1}], "list": ["x", 3]}[kind]
    if kind in ("whole", "number") and low is not None:
        out.append(low if key.above else low - 1)
    if kind in ("whole", "number") and high is not None:
        out.append(high + 1)
    if kind == "time" and key.above:
        out.append(0)
    if kind == "size":
        out += [parse_size(low) - 1, parse_size(high) + 1]
    if kind == "list" and key.length:
        out.append([] if key.length[0] else None)
    return [v for v in out if v is not None]


def cases():
    for section in topology.SECTIONS:
        yield pytest.param(section, "nonesuch", 1, id=f"{section.path or 'top'}.nonesuch")
        for key in section:
            if key.kind == "list" and key.item.kind == "mapping":
                values = ["x", [3]]           # the entries' own keys have cases of their own
            else:
                values = bad_values(key)
            for value in values:
                yield pytest.param(section, key.name, value,
                                   id=f"{section.path or 'top'}.{key.name}={value!r}")


def test_the_schema_is_a_draft_2020_12_schema_and_is_the_committed_one():
    jsonschema.Draft202012Validator.check_schema(schema())
    with open(os.path.join(ROOT, "docs", "topo.schema.json")) as f:
        assert json.load(f) == schema()


def shipped():
    files = glob.glob(os.path.join(ROOT, "topologies", "*.yaml")) + \
        glob.glob(os.path.join(ROOT, "results", "*", "base.yaml")) + \
        glob.glob(os.path.join(ROOT, "examples", "programs", "**", "*.yaml"), recursive=True)
    for recipe in glob.glob(os.path.join(ROOT, "results", "*", "recipe.yaml")):
        files.append(os.path.normpath(os.path.join(os.path.dirname(recipe),
                                                   yaml.safe_load(open(recipe))["base"])))
    return sorted(set(files))


@pytest.mark.parametrize("path", shipped(), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_shipped_topology_and_recipe_base_passes_the_schema(path):
    doc = yaml.safe_load(open(path))
    S.load(path)
    errors = [f"{e.json_path}: {e.message}" for e in VALIDATOR.iter_errors(doc)]
    assert errors == []


def test_a_file_that_uses_every_key_passes_the_schema():
    assert list(VALIDATOR.iter_errors(yaml.safe_load(EVERY_KEY))) == []
    S.loads(EXAMPLE, source=SOURCE)                 # the reference page's example
    assert list(VALIDATOR.iter_errors(yaml.safe_load(EXAMPLE))) == []
    for doc in (yaml.safe_load(TRAIN), yaml.safe_load(SEARCH), *[
            {**yaml.safe_load(TRAIN), "dynamics": [entry]} for entry in ENTRIES.values()]):
        S.loads(yaml.safe_dump(doc), source=SOURCE)
        assert list(VALIDATOR.iter_errors(doc)) == []


@pytest.mark.parametrize("section,key,value", list(cases()))
def test_what_the_validator_refuses_for_a_declared_key_the_schema_refuses(section, key, value):
    doc = with_value(section, key, value)
    assert refused_by_validator(doc), "the validator takes it: not a bad value"
    assert refused_by_schema(doc)


def test_the_bases_the_cases_change_are_valid_so_each_refusal_is_the_bad_value_s():
    for section in topology.SECTIONS:
        for key in section:
            doc, _ = where(section, key.name)
            assert not refused_by_validator(doc) and not refused_by_schema(doc), (section.path, key.name)


@pytest.mark.parametrize("change", [
    lambda d: d.pop("datacenters"),
    lambda d: d.pop("wan"),
    lambda d: d.update(search={"policy": "fair"}),
    lambda d: d["datacenters"].pop(),
    lambda d: d["datacenters"][0].pop("name"),
    lambda d: d["wan"][0].pop("bw"),
    lambda d: d["wan"][0].pop("between"),
    lambda d: d["wan"].clear(),
    lambda d: d["experiment"].update(overlay_options={"nonesuch": 1}),
    lambda d: d["experiment"].update(overlay_options={"k": 0}),
    lambda d: d["experiment"].update(overlay="ps", overlay_options={"k": 2}),
    lambda d: d["experiment"].update(overlay="optimal", overlay_options={"keep": "two"}),
    lambda d: d["experiment"].update(sync="fedavg", sync_options={"local_steps": 0}),
    lambda d: d["experiment"].update(model="mlp", model_options={"hidden": 0}),
    lambda d: d["experiment"].update(lr_schedule="sometimes"),
    lambda d: d["experiment"].update(probe=False),
    lambda d: d["experiment"].update(programs=[{"command": "true"}]),
    lambda d: d["experiment"].update(workload="command"),
    lambda d: d["experiment"].update(workload="command", programs=[{"command": "true"}]),
    lambda d: d["experiment"].update(workload="command", programs=[{"hosts": "workers"}]),
    lambda d: d["dynamics"].append({"link": ["virginia", "tokyo"], "bw": "5mbit"}),
    lambda d: d["dynamics"].append({"at": "1s", "link": ["virginia", "tokyo"]}),
    lambda d: d["dynamics"].append({"at": "1s", "link": ["virginia", "tokyo"], "down": False}),
    lambda d: d["dynamics"].append({"at": "1s", "link": ["virginia", "tokyo"], "speed": 0.5}),
    lambda d: d["dynamics"].append({"at": "1s", "worker": "tokyo-w0", "bw": "5mbit"}),
    lambda d: d["dynamics"].append({"at": "1s", "speed": 0.5}),
    lambda d: d["dynamics"].append({**ENTRIES["trace"], "at": "1s"}),
    lambda d: d["dynamics"].append({"trace": "traces/step-20-5.csv", "dc": "tokyo"}),
    lambda d: d["dynamics"].append({**ENTRIES["square"], "every": "1s"}),
    lambda d: d["dynamics"].append({**ENTRIES["square"], "low": 0.5}),
    lambda d: d["dynamics"].append({k: v for k, v in ENTRIES["square"].items() if k != "period"}),
    lambda d: d["dynamics"].append({**ENTRIES["step"], "from": "5mbit"}),
    lambda d: d["dynamics"].append({**ENTRIES["random_walk"], "generator": "sine"}),
], ids=lambda f: "")
def test_shapes_the_validator_refuses_the_schema_refuses(change, request):
    doc = yaml.safe_load(TRAIN)
    change(doc)
    assert refused_by_validator(doc)
    assert refused_by_schema(doc), request.node.callspec.id


def test_testbed_schema_prints_the_committed_schema():
    out = subprocess.run([sys.executable, "-m", "testbed.cli", "schema"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out == pages.schema_page()


def docs_example():
    """The shell block under 'From a shell' in docs/topo-yaml.md."""
    text = open(os.path.join(ROOT, "docs", "topo-yaml.md")).read()
    block = re.search(r"check-jsonschema.*?```sh\n(.*?)```", text, re.S).group(1)
    assert block == CHECK_EXAMPLE
    return block


def test_the_docs_check_jsonschema_example_passes_a_topology_and_fails_a_broken_one(tmp_path):
    script = docs_example()
    bindir = os.path.dirname(sys.executable)
    assert shutil.which("check-jsonschema", path=bindir), "make test installs check-jsonschema"
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    (tmp_path / "topologies").mkdir()
    shutil.copy(os.path.join(ROOT, "topologies", "quickstart.yaml"), tmp_path / "topologies")
    ok = subprocess.run(["bash", "-ec", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = (tmp_path / "topologies" / "quickstart.yaml").read_text().replace("bw: 50mbit", "bw: 50 mbps")
    (tmp_path / "topologies" / "quickstart.yaml").write_text(broken)
    bad = subprocess.run(["bash", "-ec", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "50 mbps" in bad.stdout + bad.stderr
