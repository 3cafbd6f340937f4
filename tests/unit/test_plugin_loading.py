"""How a user's plug-in is found and recorded: by a file beside the
topology, by an installed entry point, by module:Class; the run keyed by
its source's hash; the agents told where to import it from; files shipped
to another machine.  And the training settings topo.yaml takes."""

import os
import subprocess
import sys
import textwrap

import pytest

from agents.plugins import PluginError
from agents.sync import SYNC
from testbed import spec as S
from testbed.run import provenance
from testbed.sweeps import sweep

SCHEME = textwrap.dedent("""\
    from agents.sync.base import SyncScheme

    class Scheme(SyncScheme):
        NAME = "mine"
        DESCRIPTION = "{what}"

        def work(self, ctx):
            pass
    """)
TOPO = textwrap.dedent("""\
    datacenters: [{name: a, workers: 1, servers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 10mbit, delay: 5ms}]
    experiment: {sync: ./mine.py:Scheme, EXTRA}
    """)


def topology(tmp_path, extra="seed: 0", what="v1"):
    (tmp_path / "mine.py").write_text(SCHEME.format(what=what))
    (tmp_path / "topo.yaml").write_text(TOPO.replace("EXTRA", extra))
    return S.load(str(tmp_path / "topo.yaml"))


def test_a_plug_in_beside_the_topology_runs_from_its_absolute_path_keyed_by_its_source(tmp_path):
    spec = topology(tmp_path)
    path = str(tmp_path / "mine.py")
    assert spec.experiment.sync == f"{path}:Scheme"
    ((kind, ref, sha),) = spec.experiment.plugins
    assert (kind, ref, len(sha)) == ("sync", f"{path}:Scheme", 64)
    key = sweep.spec_key(spec)
    assert sweep.spec_key(topology(tmp_path)) == key
    # Another source under the same name is another run: a cached one is not reused.
    assert sweep.spec_key(topology(tmp_path, what="v2")) != key
    # Built-ins only: no plug-ins recorded, and the key is the one it always was.
    builtin = S.loads(TOPO.replace("./mine.py:Scheme", "ssgd").replace("EXTRA", "seed: 0"))
    assert builtin.experiment.plugins == ()


def test_a_plug_in_file_is_shipped_and_its_paths_moved_for_another_machine(tmp_path):
    spec = topology(tmp_path)
    files = provenance.plugin_files(spec)
    assert list(files) == [str(tmp_path / "mine.py")] and "class Scheme" in files[str(tmp_path / "mine.py")]
    moved = provenance.relocated(spec, {str(tmp_path / "mine.py"): "/scratch/0/mine.py"})
    assert moved.experiment.sync == "/scratch/0/mine.py:Scheme"
    assert moved.experiment.plugins[0][1] == "/scratch/0/mine.py:Scheme"
    assert moved.experiment.overlay == "ps"


def test_the_agents_import_a_user_s_module_from_the_root_of_its_dotted_name(tmp_path):
    pkg = tmp_path / "lab" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "schemes.py").write_text(SCHEME.format(what="pkg"))
    sys.path.insert(0, str(tmp_path / "lab"))
    try:
        _, origin = SYNC.load("mypkg.schemes:Scheme")
    finally:
        sys.path.remove(str(tmp_path / "lab"))
    assert provenance.import_roots([origin]) == [str(tmp_path / "lab")]
    assert provenance.import_roots([SYNC.load("ssgd")[1]]) == []


def test_an_installed_entry_point_is_known_by_its_name_and_listed(tmp_path):
    site = tmp_path / "site"
    (site / "labsync").mkdir(parents=True)
    (site / "labsync" / "__init__.py").write_text(SCHEME.format(what="from an entry point"))
    info = site / "labsync-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labsync\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[geo_testbed.sync]\nlab = labsync:Scheme\n")
    sys.path.insert(0, str(site))
    try:
        cls, origin = SYNC.load("lab")
        assert cls.DESCRIPTION == "from an entry point" and not origin.builtin
        assert "lab" in SYNC.names()
    finally:
        sys.path.remove(str(site))
    r = subprocess.run([sys.executable, "-m", "testbed.cli", "plugins", "--kind", "sync"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert r.returncode == 0, r.stderr
    assert "lab  from an entry point  (from labsync:Scheme)" in r.stdout
    assert "ssgd" in r.stdout and "(built in)" in r.stdout


@pytest.mark.parametrize("extra,path,words", [
    ("optimizer: lion", "experiment.optimizer", "unknown optimizer 'lion'"),
    ("lr_schedule: {kind: step}", "experiment.lr_schedule.every", "needs every"),
    ("lr_schedule: {kind: cosine, total: 0}", "experiment.lr_schedule.total", "must be a whole number"),
    ("betas: [0.9]", "experiment.betas", "two numbers"),
    ("loss: hinge", "experiment.loss", "unknown loss 'hinge'"),
    ("metrics: [top1]", "experiment.metrics[0]", "unknown metric 'top1'"),
])
def test_training_settings_refuse_what_they_cannot_run_naming_the_path(tmp_path, extra, path, words):
    with pytest.raises(S.SpecError) as e:
        S.loads(TOPO.replace("./mine.py:Scheme", "ssgd").replace("EXTRA", extra))
    assert e.value.path == path and words in e.value.message


def test_training_settings_reach_the_experiment_a_cosine_schedule_ending_at_the_last_iteration():
    exp = S.loads(TOPO.replace("./mine.py:Scheme", "ssgd").replace(
        "EXTRA", "optimizer: adamw, weight_decay: 0.01, lr_schedule: cosine, metrics: [top5], "
                 "stop: {iterations: 30}")).experiment
    assert (exp.optimizer, exp.weight_decay, exp.lr_schedule, exp.metrics) == \
        ("adamw", 0.01, ("cosine", 1, 0.1, 30), ("top5",))
    with pytest.raises(S.SpecError, match="a synthetic workload computes nothing"):
        S.loads(TOPO.replace("./mine.py:Scheme", "ssgd").replace(
            "EXTRA", "workload: synthetic, optimizer: adam"))


def test_a_missing_file_or_class_is_one_sentence():
    with pytest.raises(PluginError, match="there is no file"):
        SYNC.load("./nowhere.py:Scheme", base_dir="/tmp")
    with pytest.raises(PluginError, match="agents.sync.ssgd has no Nope"):
        SYNC.load("agents.sync.ssgd:Nope")
    with pytest.raises(PluginError, match="cannot be imported: ModuleNotFoundError"):
        SYNC.load("no_such_module_here:Scheme")
