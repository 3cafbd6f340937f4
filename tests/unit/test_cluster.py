"""The pure parts of running sweeps on a Ray cluster: the progress line,
shipping a run folder back, and refusing a cluster that cannot be used."""

import io
import json
import os
import stat
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
        cluster.unpack(buf.getvalue(), {"name": "20260101-000000-demo", "run": "r", "source": "s"},
                       planned)
    assert os.listdir(planned.folder) == []


def tar_of(*members):
    """A gzipped tar of (TarInfo, bytes) members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def member(name, data=b"x", kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, data


@pytest.mark.parametrize("name", [".", "..", "", "../20260101-000000-demo", "/tmp",
                                  "20260101-000000-demo/..", "20260101-000000-Demo"])
def test_a_name_that_is_not_a_run_folder_s_is_refused_before_anything_is_unpacked(tmp_path, name):
    # A sibling run the name `..` would reach: its files must stay as they are.
    sibling = make_run(str(tmp_path / "there"), "/scratch/topo.yaml")
    planned = SimpleNamespace(folder=os.path.join(os.path.dirname(sibling), "setting"),
                              spec=SimpleNamespace(source="/driver/topo.yaml"))
    data = tar_of(member("x/spec.json", b"{}"))
    with pytest.raises(cluster.ClusterError, match="not a run folder"):
        cluster.unpack(data, {"name": name, "run": "/scratch", "source": "/scratch/topo.yaml"}, planned)
    assert json.loads(read(os.path.join(sibling, "spec.json")))["source"] == "/scratch/topo.yaml"
    assert not os.path.exists(planned.folder)


@pytest.mark.parametrize("bad", [
    member("20260101-000000-demo/../../escaped", b"out"),
    member("20260101-000000-demo/link", kind=tarfile.SYMTYPE, link="../../.."),
])
def test_a_tar_whose_members_would_land_outside_is_refused_and_leaves_nothing(tmp_path, bad):
    planned = SimpleNamespace(folder=str(tmp_path / "here" / "setting"), spec=SimpleNamespace(source="s"))
    members = [member("20260101-000000-demo/status.json", b"{}"), bad]
    if bad[0].type == tarfile.SYMTYPE:
        members.append(member("20260101-000000-demo/link/escaped", b"out"))
    with pytest.raises(cluster.ClusterError, match="cannot be unpacked safely"):
        cluster.unpack(tar_of(*members), {"name": "20260101-000000-demo", "run": "r", "source": "s"},
                       planned)
    assert os.listdir(planned.folder) == []
    assert not [p for p in (tmp_path / "here", tmp_path) if (p / "escaped").exists()]


def test_the_scratch_root_must_be_this_user_s_alone(tmp_path):
    ours = str(tmp_path / "scratch")
    assert cluster.scratch_root(ours) == ours and stat.S_IMODE(os.stat(ours).st_mode) == 0o700
    os.chmod(ours, 0o777)                       # made by someone else first, for everyone
    with pytest.raises(cluster.ClusterError, match=r"mode 777; scratch runs need a folder"):
        cluster.scratch_root(ours)
    os.chmod(ours, 0o700)
    os.chown(ours, 4242, -1)
    with pytest.raises(cluster.ClusterError, match="owned by uid 4242"):
        cluster.scratch_root(ours)
    link = str(tmp_path / "link")
    os.symlink(str(tmp_path), link)
    with pytest.raises(cluster.ClusterError, match="is not a folder"):
        cluster.scratch_root(link)


def test_the_cluster_docs_say_the_ray_head_is_unauthenticated_and_what_network_it_needs():
    with open(os.path.join(ROOT, "docs", "clusters.md")) as f:
        section = f.read().split("## Security: the head is unauthenticated")[1].split("\n## ")[0]
    text = " ".join(section.split())
    assert "authenticates no one" in text and "a network only its own machines reach" in text


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


# The modules that join a Ray cluster: sweeps' tasks, and the machines of one WAN.
RAY_USERS = {os.path.join("testbed", "sweeps", "cluster.py"), os.path.join("testbed", "spanning", "machines.py")}


def test_nothing_but_the_cluster_modules_import_ray():
    found = []
    for folder in ("testbed", "agents"):
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(base, name)
                if name.endswith(".py") and os.path.relpath(path, ROOT) not in RAY_USERS:
                    text = read(path)
                    if "import ray" in text or "from ray" in text:
                        found.append(path)
    assert found == []
