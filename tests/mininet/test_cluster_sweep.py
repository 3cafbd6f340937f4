"""Sweeps and recipes on a Ray cluster: a local Ray head with one `testbed`
unit stands for a cluster of one machine."""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from testbed.emulation import state as statemod
from testbed.sweeps import cluster
from tests.mininet.helpers import ROOT, cli_argv, east_west, interruptible, root_links_with
from tests.ports import free_port

pytestmark = pytest.mark.mininet
RAY = os.path.join(os.path.dirname(sys.executable), "ray")

# Two settings of a small synthetic run long enough to be caught while it runs.
BASE = east_west("base", """
    workload: synthetic
    model: flat-100000
    compute_time: 100ms
    stop: {iterations: 1000000, time: 6s}
""")
RECIPE = """
id: cluster-demo
title: two settings
base: base.yaml
axes:
  experiment.seed: [0, 1]
"""


def processes_of_head(temp_dir):
    """Pids of the head's processes (their command lines name its temp
    folder) and of the workers they started; no other Ray is touched."""
    parents = {}
    heads = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if temp_dir.encode() in cmd and int(pid) != os.getpid():
            heads.add(int(pid))
    found, grew = set(heads), True
    while grew:
        more = {p for p, pp in parents.items() if pp in found} - found
        found |= more
        grew = bool(more)
    return found


def stop_head(temp_dir):
    # Ray's GCS server and its autoscaler monitor are still up 10 s after a
    # SIGTERM, so the grace before SIGKILL is short.
    for sig, grace in ((signal.SIGTERM, 2), (signal.SIGKILL, 10)):
        for pid in processes_of_head(temp_dir):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while processes_of_head(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head on this machine offering one `testbed` unit; stopped at
    the end of the module (the sweeps of its tests are short)."""
    temp_dir = tempfile.mkdtemp(prefix="tbray", dir="/tmp")   # short: Ray puts sockets in it
    port = free_port()
    try:
        subprocess.run([RAY, "start", "--head", "--port", str(port), "--resources",
                        json.dumps({cluster.RESOURCE: 1}), "--num-cpus", "2",
                        "--disable-usage-stats", "--include-dashboard=false",
                        "--temp-dir", temp_dir], check=True, capture_output=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"})
        yield SimpleHead(f"127.0.0.1:{port}", temp_dir)
    finally:
        stop_head(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        cluster.remove_leftovers()     # what a task whose worker a test killed left


class SimpleHead:
    def __init__(self, address, temp_dir):
        self.address = address
        self.temp_dir = temp_dir

    def task_runs(self):
        """{state run id: state} of the runs whose runner is a task of this head."""
        ours = processes_of_head(self.temp_dir)
        found = {}
        for rid in os.listdir(statemod.STATE_ROOT) if os.path.isdir(statemod.STATE_ROOT) else ():
            try:
                with open(os.path.join(statemod.STATE_ROOT, rid, "state.json")) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            if (data.get("runner") or {}).get("pid") in ours:
                found[rid] = data
        return found

    def wait_for_task_run(self, seed=None, timeout=120, not_pids=()):
        """A run of a task of this head whose network is up (and whose
        setting has that seed); returns (run id, state)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for rid, data in self.task_runs().items():
                if data["runner"]["pid"] in not_pids or not data.get("links"):
                    continue
                if seed is None or seed_of(data) == seed:
                    return rid, data
            time.sleep(0.2)
        raise AssertionError("no task of the Ray head started a run")


def scratch_of(data):
    """The scratch folder of a task's run: it holds runs/<run> and topo.yaml."""
    return os.path.dirname(os.path.dirname(data["run_dir"]))


def seed_of(data):
    """The seed of the setting a task runs."""
    import yaml
    topo = os.path.join(scratch_of(data), "topo.yaml")
    try:
        with open(topo) as f:
            return yaml.safe_load(f)["experiment"]["seed"]
    except (OSError, TypeError, KeyError):
        return None


def recipe_at(tmp_path):
    folder = tmp_path / "recipe"
    folder.mkdir()
    (folder / "base.yaml").write_text(BASE)
    (folder / "recipe.yaml").write_text(textwrap.dedent(RECIPE))
    return str(folder / "recipe.yaml")


def files_of(run_dir):
    return sorted(os.path.relpath(os.path.join(b, f), run_dir)
                  for b, _, fs in os.walk(run_dir) for f in fs)


def sweep_record(sweep_dir):
    with open(os.path.join(sweep_dir, "sweep.json")) as f:
        return json.load(f)["settings"]


def gone(rid, data):
    """Nothing of the run is left: its state folder, links, processes."""
    return (not os.path.exists(os.path.join(statemod.STATE_ROOT, rid))
            and not root_links_with(data["prefix"]) and not statemod.processes_of(rid, data))


@pytest.mark.timeout(600)
def test_a_recipe_on_the_cluster_leaves_what_a_local_one_does_and_resumes(tmp_path, ray_head,
                                                                         ps_scaling_quick):
    local, remote = ps_scaling_quick, tmp_path / "cluster"
    r = subprocess.run(cli_argv("reproduce", "ps-scaling", "--quick", "--runs", str(remote / "runs"),
                                "--out", str(remote / "out"), "--cluster", ray_head.address),
                       capture_output=True, text=True, timeout=280, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    sweeps = [w / "runs" / "sweeps" / "ps-scaling-quick" for w in (local, remote)]
    records = [sweep_record(s) for s in sweeps]
    assert [e["status"] for e in records[1]] == ["completed", "completed"]
    # The same settings, keyed alike, each with one run folder holding the same files.
    assert [(e["label"], e["key"]) for e in records[0]] == [(e["label"], e["key"]) for e in records[1]]
    for here, there in zip(records[0], records[1]):
        assert os.path.dirname(there["run"]) == os.path.join(str(sweeps[1]), f"{there['label']}-{there['key']}")
        assert files_of(here["run"]) == files_of(there["run"])
        with open(os.path.join(there["run"], "spec.json")) as f:
            assert json.load(f)["source"] == os.path.join(str(sweeps[1]), "specs", there["label"] + ".yaml")
        for name in files_of(there["run"]):
            if name.endswith(".json"):
                with open(os.path.join(there["run"], name)) as f:
                    assert cluster.SCRATCH_ROOT not in f.read(), name
    tables = [list(csv.reader((w / "out" / "table.csv").read_text().splitlines()))
              for w in (local, remote)]
    assert tables[0][0] == tables[1][0] and len(tables[0]) == len(tables[1]) == 3
    assert all(os.path.getsize(w / "out" / "figure.png") > 5000 for w in (local, remote))
    # Again: both settings are skipped, and no run is added.
    r = subprocess.run(cli_argv("reproduce", "ps-scaling", "--quick", "--runs", str(remote / "runs"),
                                "--out", str(remote / "out"), "--cluster", ray_head.address),
                       capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    again = sweep_record(sweeps[1])
    assert [e["status"] for e in again] == ["skipped (already completed)"] * 2
    assert [e["run"] for e in again] == [e["run"] for e in records[1]]
    assert all(len(os.listdir(os.path.dirname(e["run"]))) == 1 for e in again)


@pytest.mark.timeout(600)
def test_a_setting_whose_worker_keeps_dying_is_retried_then_recorded_failed_and_the_sweep_ends(
        tmp_path, ray_head):
    sweep = subprocess.Popen(cli_argv("sweep", recipe_at(tmp_path), "--runs", str(tmp_path / "runs"),
                                      "--cluster", ray_head.address),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             preexec_fn=interruptible)
    killed = []
    try:
        # Every attempt of the seed-0 setting loses its worker process while its network is up.
        for _ in range(1 + cluster.MAX_RETRIES):
            rid, data = ray_head.wait_for_task_run(seed=0, not_pids=[d["runner"]["pid"] for _, d in killed])
            os.kill(data["runner"]["pid"], signal.SIGKILL)
            killed.append((rid, data))
        out, err = sweep.communicate(timeout=300)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, out + err
    record = sweep_record(str(tmp_path / "runs" / "sweeps" / "cluster-demo"))
    assert [e["status"] for e in record] == ["failed", "completed"]
    assert record[0]["run"] is None
    assert record[0]["reason"].startswith(f"WorkerCrashedError after {1 + cluster.MAX_RETRIES} attempts")
    assert len({d["runner"]["pid"] for _, d in killed}) == 1 + cluster.MAX_RETRIES
    # Each killed attempt's network was removed by the task that came after it on the machine.
    assert all(gone(rid, data) for rid, data in killed[:-1])
    assert not any(os.path.exists(scratch_of(data)) for _, data in killed[:-1])


def agent_environments(rid, data, timeout=60):
    """The environments of a run's agents (processes in its namespaces
    that run agent code), once they have started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        envs = []
        for ident in statemod.processes_of(rid, data):
            if any("agents" in part for part in ident["cmd"]):
                try:
                    with open(f"/proc/{ident['pid']}/environ", "rb") as f:
                        envs.append(dict(item.split(b"=", 1) for item in f.read().split(b"\0")
                                         if b"=" in item))
                except OSError:
                    continue
        if envs:
            return envs
        time.sleep(0.2)
    raise AssertionError(f"run {rid} started no agents")


@pytest.mark.timeout(300)
def test_a_tasks_agents_lack_rays_thread_limit_and_an_interrupt_removes_its_network(tmp_path, ray_head):
    sweep = subprocess.Popen(cli_argv("sweep", recipe_at(tmp_path), "--runs", str(tmp_path / "runs"),
                                      "--cluster", ray_head.address),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             preexec_fn=interruptible)
    try:
        rid, data = ray_head.wait_for_task_run()
        # Ray sets OMP_NUM_THREADS=1 in its workers; agents compute as they would locally.
        assert all(b"OMP_NUM_THREADS" not in env for env in agent_environments(rid, data))
        sweep.send_signal(signal.SIGINT)
        out, err = sweep.communicate(timeout=cluster.CANCEL_GRACE + 60)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 1 and "interrupted: the cluster's tasks were cancelled" in err, out + err
    assert "Traceback" not in err
    assert gone(rid, data)
    # No run of the head's tasks is left, and the other setting never finished.
    assert ray_head.task_runs() == {}
    assert not os.path.exists(tmp_path / "runs" / "sweeps" / "cluster-demo" / "sweep.json")
