"""The pure parts of running sweeps on a Ray cluster: the progress line,
shipping a run folder back, and refusing a cluster that cannot be used."""

import io
import json
import os
import subprocess
import sys
import tarfile
from types import SimpleNamespace

import pytest

from testbed.sweeps import cluster
from tests.ports import free_port
from testbed.records.runfolder import is_run_folder

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RECIPE = os.path.join(ROOT, "results", "ps-scaling", "recipe.yaml")


def test_the_progress_line_says_what_runs_where_and_how_many_wait():
    running = {"workers-3": "b (10.0.0.2)", "workers-2": "a (10.0.0.1)"}
    assert cluster.progress_text(running, 4) == \
        "running workers-2 on a (10.0.0.1), workers-3 on b (10.0.0.2); 4 left"
    assert cluster.progress_text({}, 2) == "waiting for a machine; 2 left"
    assert cluster.progress_text({"s": "a"}, 0) == "running s on a"


def read(path):
    with open(path) as f:
        return f.read()


def make_run(root, scratch_source):
    """A run folder as a task leaves it on its machine."""
    run = os.path.join(root, "runs", "20260101-000000-demo")
    os.makedirs(os.path.join(run, "agents"))
    with open(os.path.join(run, "spec.json"), "w") as f:
        json.dump({"name": "demo", "source": scratch_source}, f, indent=1)
    with open(os.path.join(run, "agents", "a-w0.json"), "w") as f:
        f.write(json.dumps({"events": os.path.join(run, "agents", "a-w0.jsonl")}) + "\n")
    with open(os.path.join(run, "agents", "a-w0.jsonl"), "w") as f:
        f.write('{"ev": "start"}\n')
    with open(os.path.join(run, "status.json"), "w") as f:
        json.dump({"status": "completed"}, f)
    return run


def test_a_shipped_run_lands_in_the_setting_folder_naming_the_drivers_paths(tmp_path):
    scratch = tmp_path / "there"
    run = make_run(str(scratch), str(scratch / "topo.yaml"))
    planned = SimpleNamespace(folder=str(tmp_path / "here" / "setting-abc"),
                              spec=SimpleNamespace(source="/driver/specs/setting.yaml"))
    result = {"name": os.path.basename(run), "run": run, "source": str(scratch / "topo.yaml")}
    data = cluster.pack(run)

    dest = cluster.unpack(data, result, planned)
    assert dest == os.path.join(planned.folder, "20260101-000000-demo") and is_run_folder(dest)
    assert json.loads(read(os.path.join(dest, "spec.json"))) == \
        {"name": "demo", "source": "/driver/specs/setting.yaml"}
    assert json.loads(read(os.path.join(dest, "agents", "a-w0.json"))) == \
        {"events": os.path.join(dest, "agents", "a-w0.jsonl")}
    assert read(os.path.join(dest, "agents", "a-w0.jsonl")) == '{"ev": "start"}\n'
    # Nothing half-unpacked stays behind; a second copy of the same name does not overwrite.
    assert os.listdir(planned.folder) == ["20260101-000000-demo"]
    again = cluster.unpack(data, result, planned)
    assert again == dest + "-2" and sorted(os.listdir(planned.folder)) == \
        ["20260101-000000-demo", "20260101-000000-demo-2"]


def test_a_tar_that_is_not_one_run_folder_is_refused(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("elsewhere.txt")
        tar.addfile(info, io.BytesIO(b""))
    planned = SimpleNamespace(folder=str(tmp_path / "setting"), spec=SimpleNamespace(source="x"))
    with pytest.raises(cluster.ClusterError, match="not a run folder"):
        cluster.unpack(buf.getvalue(), {"name": "../x", "run": "r", "source": "s"}, planned)
    assert os.listdir(planned.folder) == []


def test_an_address_nothing_answers_at_is_told_at_once():
    with pytest.raises(cluster.ClusterError, match="no Ray head answers at 127.0.0.1:"):
        cluster._check_reachable(f"127.0.0.1:{free_port()}")   # nobody listens
    with pytest.raises(cluster.AddressError, match="HOST:PORT"):
        cluster._check_reachable("head-without-port")


def sweep_cli(tmp_path, *args, without_ray=False):
    prelude = "import sys; sys.modules['ray'] = None; " if without_ray else ""
    return subprocess.run([sys.executable, "-c", prelude + "from testbed.cli import main; main()",
                           "sweep", RECIPE, "--quick", "--runs", str(tmp_path / "runs"), *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)


def test_cluster_mistakes_are_one_sentence_and_touch_nothing(tmp_path):
    r = sweep_cli(tmp_path, "--cluster", "auto", without_ray=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "install the cluster extra" in r.stderr and "Traceback" not in r.stderr
    r = sweep_cli(tmp_path, "--cluster", "nohead")
    assert r.returncode == 2 and r.stderr.startswith("error: --cluster 'nohead'"), r.stderr
    r = sweep_cli(tmp_path, "--cluster", f"127.0.0.1:{free_port()}")
    assert r.returncode == 1 and "no Ray head answers" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "runs").exists()


def test_nothing_but_the_cluster_module_imports_ray():
    found = []
    for folder in ("testbed", "agents"):
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(base, name)
                if name.endswith(".py") and os.path.basename(path) != "cluster.py":
                    text = read(path)
                    if "import ray" in text or "from ray" in text:
                        found.append(path)
    assert found == []
