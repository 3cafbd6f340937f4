"""Programs of the user's own over the emulated WAN: unmodified DDP with
torchrun across three DCs, a program that fails, one that outlives the time
limit, and who they run as."""

import json
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

from agents.planning.wan import GOODPUT_SHARE
from tests.mininet.helpers import ROOT, cli_argv, run_topology, running

pytestmark = pytest.mark.mininet
PROGRAMS = os.path.join(ROOT, "examples", "programs")
STEPS = 40
# The digits MLP: 64 x 128 + 128 + 128 x 10 + 10 float32 values.
MODEL_BYTES = (64 * 128 + 128 + 128 * 10 + 10) * 4

PAIR = """\
name: {name}
datacenters: [{{name: east, workers: 1}}, {{name: west, workers: 1}}]
wan: [{{between: [east, west], bw: 20mbit, delay: 10ms}}]
experiment:
  workload: command
  programs:
{programs}
  stop: {{time: {limit}}}
"""


def pair(name, programs, limit="1min", extra=""):
    return PAIR.format(name=name, programs=programs, limit=limit) + extra


def test_ddp_over_gloo_sends_what_a_ring_all_reduce_must_and_a_rate_change_shows(tmp_path):
    # One worker in each of three DCs: gloo's ring for N = 3 ranks sends, per
    # all-reduce, 2 (N - 1) / N of the gradients' bytes from every rank to the
    # next on the ring (reduce-scatter, then all-gather, each N - 1 steps of
    # M / N).  With one rank per DC every ring edge is one WAN direction, so
    # three directions carry STEPS x 4/3 x M of payload (plus DDP's one
    # broadcast of the model at the start and the rendezvous store's few
    # bytes), and the three reverse ones carry only their TCP ACKs.
    text = open(os.path.join(PROGRAMS, "ddp.yaml")).read().replace("--steps 50", f"--steps {STEPS}")
    topo = tmp_path / "ddp.yaml"
    topo.write_text(text)
    shutil.copy(os.path.join(PROGRAMS, "ddp_digits.py"), tmp_path)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(cli_argv("run", str(topo), "--runs", str(runs)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("run folder:"):
            run = line.split(":", 1)[1].strip()
        if "MB moved" in line and float(line.split("|")[1].split()[0]) > 1.0:
            break
    inject = subprocess.run(cli_argv("inject", "--run", run, "link", "virginia", "frankfurt", "bw",
                                     "40mbit"), capture_output=True, text=True, cwd=ROOT)
    assert inject.returncode == 0, inject.stderr
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, "".join(lines) + rest
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "completed" and all(p["code"] == 0 for p in summary["programs"])
    expected = STEPS * 2 * 2 / 3 * MODEL_BYTES
    payload = sorted(w["bytes"] * GOODPUT_SHARE for w in summary["wan"].values())
    ring, reverse = payload[3:], payload[:3]
    assert all(abs(b / expected - 1) <= 0.10 for b in ring), (payload, expected)
    assert all(b < 0.1 * expected for b in reverse), (payload, expected)
    # The change is in the report: one per direction, and each one's configured rate at the end.
    assert summary["link_changes"] == 2
    assert summary["wan"]["virginia->frankfurt"]["configured_rate_final"] == 40e6
    assert summary["wan"]["frankfurt->virginia"]["configured_rate_final"] == 40e6
    assert summary["metrics"]["virginia-w0"]["accuracy"] > 0.8


def test_a_program_that_fails_fails_the_run_with_the_end_of_its_stderr(tmp_path):
    programs = ("    - hosts: [east-w0]\n      command: sleep 30\n"
                "    - hosts: [west-w0]\n      command: echo one >&2; echo two >&2; exit 3\n")
    topo = tmp_path / "fail.yaml"
    topo.write_text(pair("fail", programs))
    r = subprocess.run(cli_argv("run", str(topo), "--runs", str(tmp_path / "runs")),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "the program on west-w0 exited with code 3; its stderr ends:\n  one\n  two" in r.stderr
    (run,) = os.listdir(tmp_path / "runs")
    status = json.load(open(tmp_path / "runs" / run / "status.json"))
    assert status["status"] == "failed" and status["stopped_by"] == "agent-failure"


def test_programs_outliving_the_time_limit_are_ended_with_all_they_started(tmp_path):
    # Each program starts a child that would outlive it: both must end with the run.
    programs = ("    - hosts: all\n      command: sleep 600 & echo $! > {run_dir}/child-{host}; "
                "sleep 600\n")
    topo = tmp_path / "long.yaml"
    topo.write_text(pair("long", programs, limit="4s"))
    r = subprocess.run(cli_argv("run", str(topo), "--runs", str(tmp_path / "runs")),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    (run,) = os.listdir(tmp_path / "runs")
    run = tmp_path / "runs" / run
    status = json.load(open(run / "status.json"))
    assert status["stopped_by"] == "time"
    assert "ended the programs still running on east-w0, west-w0" in status["reason"]
    children = [int((run / f"child-{h}").read_text()) for h in ("east-w0", "west-w0")]
    assert children and not any(running(pid) for pid in children)
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout == ""


def test_programs_run_as_the_user_asked_with_the_launchers_environment(tmp_path):
    nobody = pwd.getpwnam("nobody")
    # Without access to the topology's folder, the user is refused in one sentence.
    (tmp_path / "who.yaml").write_text(pair("who", "    - hosts: all\n      command: 'true'\n",
                                            extra="  user: nobody\n"))
    r = subprocess.run(cli_argv("run", str(tmp_path / "who.yaml"), "--runs", str(tmp_path / "r")),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "error: user nobody cannot enter" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    # A folder of theirs: /tmp/pytest-of-root is root's alone.
    tmp_path = tempfile.mkdtemp(prefix="who-", dir="/tmp")
    os.chmod(tmp_path, 0o755)
    tmp_path = pathlib.Path(tmp_path)
    (tmp_path / "who.py").write_text(
        "import json, os\n"
        "with open(os.environ['TESTBED_METRICS'], 'a') as f:\n"
        "    f.write(json.dumps({'uid': os.getuid(), 'rank': int(os.environ['RANK'])}) + '\\n')\n")
    programs = "    - hosts: all\n      command: python3 who.py\n"
    run, summary = run_topology(tmp_path, "who", pair("who", programs, extra="  user: nobody\n"))
    assert summary["status"] == "completed"
    assert summary["metrics"] == {"east-w0": {"uid": nobody.pw_uid, "rank": 0},
                                  "west-w0": {"uid": nobody.pw_uid, "rank": 1}}
    records = json.load(open(os.path.join(run, "programs.json")))
    assert [(p["host"], p["rank"], p["user"]) for p in records] == [("east-w0", 0, "nobody"),
                                                                    ("west-w0", 1, "nobody")]
    shutil.rmtree(tmp_path)


def test_the_python_api_example_runs_a_dict_experiment_and_its_tables_hold_its_summary(tmp_path):
    script = os.path.join(ROOT, "examples", "python_api.py")
    r = subprocess.run([sys.executable, script, "--runs", str(tmp_path / "runs")], capture_output=True,
                       text=True, timeout=400, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "refused: experiment.lr: -1 must be a number in 0.0..100.0" in r.stdout
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["status"] == "completed" and got["lr"] == 0.05
    assert got["iterations"] == got["rounds"] == 12 and got["workers"] == got["summary_workers"] == 6
    assert got["final"] == got["last_eval"]
    assert got["links_rows"] > 0 and got["cpu_rows"] > 0


def test_set_overrides_a_key_validated_and_recorded_and_export_writes_the_tables(tmp_path):
    programs = "    - hosts: all\n      command: \"echo '{{\\\"x\\\": 1}}' >> $TESTBED_METRICS\"\n"
    topo = tmp_path / "set.yaml"
    topo.write_text(pair("set", programs))
    bad = subprocess.run(cli_argv("run", str(topo), "--set", "experiment.master_port=80"),
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "experiment.master_port: 80 must be a whole number in 1024..65535" \
        in bad.stderr
    r = subprocess.run(cli_argv("run", str(topo), "--runs", str(tmp_path / "runs"), "--set",
                                "experiment.master_port=29600"), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    (run,) = os.listdir(tmp_path / "runs")
    run = tmp_path / "runs" / run
    assert json.load(open(run / "overrides.json")) == ["experiment.master_port=29600"]
    assert json.load(open(run / "spec.json"))["experiment"]["master_port"] == 29600
    out = tmp_path / "tables"
    r = subprocess.run(cli_argv("export", str(run), "--parquet", str(out)), capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    import pandas as pd
    metrics = pd.read_parquet(out / "metrics.parquet")
    assert sorted(metrics.host) == ["east-w0", "west-w0"] and list(metrics.x) == [1, 1]
