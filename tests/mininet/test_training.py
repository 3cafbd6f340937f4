"""`testbed run` trains for real over the emulated WAN, and fails cleanly."""

import csv
import json
import os
import signal
import subprocess
import time

import pytest

from agents.events import read_events
from tests.mininet.helpers import ROOT, cli_argv, root_links_with

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")


def only_run_in(runs):
    (name,) = os.listdir(runs)
    return os.path.join(runs, name)


def test_the_quickstart_trains_to_the_accuracy_floor(tmp_path):
    runs = tmp_path / "runs"
    r = subprocess.run(cli_argv("run", QUICKSTART, "--runs", str(runs)), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    run = only_run_in(runs)
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "completed"
    assert summary["final_accuracy"] >= 0.85
    assert summary["workers"] == 6 and summary["iterations"] > 0
    b = summary["iteration_breakdown"]
    assert b["compute"] > 0 and b["comm"] > 0 and b["wait"] >= 0
    # Every worker pushed through its DC's WAN link to the server in virginia.
    for link in ("frankfurt->virginia", "tokyo->virginia", "virginia->tokyo"):
        assert summary["wan"][link]["bytes"] > 0
    assert summary["environment"]["delay_backend"] in ("relay", "netem")
    for png in ("accuracy.png", "iteration_time.png", "links.png"):
        assert os.path.getsize(os.path.join(run, png)) > 1000
    assert "final accuracy" in r.stdout

    # Side by side (here the run with itself): one row each, the bound stated.
    out = tmp_path / "compare"
    c = subprocess.run(cli_argv("compare", run, run, "--out", str(out)), capture_output=True,
                       text=True, timeout=120)
    assert c.returncode == 0, c.stderr
    rows = list(csv.DictReader(open(out / "compare.csv")))
    assert len(rows) == 2 and float(rows[0]["sync_over_bound"]) > 1.0
    assert float(rows[0]["final_accuracy"]) == summary["final_accuracy"]
    assert os.path.getsize(out / "compare.png") > 1000


def test_killing_a_worker_fails_the_run_quickly_and_cleanly(tmp_path):
    topo = tmp_path / "long.yaml"
    text = open(QUICKSTART).read().replace("stop: {accuracy: 0.9, iterations: 400, time: 3min}",
                                           "stop: {iterations: 100000, time: 5min}")
    topo.write_text(text)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(cli_argv("run", str(topo), "--runs", str(runs)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        events_path = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if runs.exists() and os.listdir(runs):
                events_path = os.path.join(only_run_in(runs), "agents", "tokyo-w1.jsonl")
                if sum(e["ev"] == "iter" for e in read_events(events_path)) >= 5:
                    break
            time.sleep(0.5)
        else:
            raise AssertionError("training did not start")
        victim = next(int(p) for p in os.listdir("/proc") if p.isdigit() and
                      b"tokyo-w1.json" in open(f"/proc/{p}/cmdline", "rb").read())
        run_id = json.load(open(os.path.join(only_run_in(runs), "env.json")))["run_id"]
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        out, err = proc.communicate(timeout=60)
        assert time.monotonic() - killed < 10
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "tokyo-w1" in err and "SIGKILL" in err and "Traceback" not in err
    run = only_run_in(runs)
    assert json.load(open(os.path.join(run, "status.json")))["status"] == "failed"
    assert sum(e["ev"] == "iter" for e in read_events(events_path)) >= 5
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "failed"
    assert root_links_with(f"tb{run_id}") == []
