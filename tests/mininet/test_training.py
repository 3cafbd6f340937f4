"""`testbed run` trains for real over the emulated WAN, and fails cleanly."""

import csv
import json
import os
import signal
import subprocess
import time

import pytest

from agents.events import read_events
from testbed.emulation import network
from tests.mininet.helpers import ROOT, cli_argv, root_links_with

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")


def only_run_in(runs):
    (name,) = os.listdir(runs)
    return os.path.join(runs, name)


def mean_of(run, worker, key):
    iters = [e[key] for e in read_events(os.path.join(run, "agents", f"{worker}.jsonl"))
             if e["ev"] == "iter"]
    return sum(iters) / len(iters)


@pytest.mark.timeout(900)
def test_the_quickstart_trains_to_its_90_percent_target_and_stops_there(tmp_path):
    runs = tmp_path / "runs"
    r = subprocess.run(cli_argv("run", QUICKSTART, "--runs", str(runs)), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    run = only_run_in(runs)
    summary = json.load(open(os.path.join(run, "summary.json")))
    status = json.load(open(os.path.join(run, "status.json")))
    # The README's promise: 90% test accuracy, and the accuracy stop is what ended it,
    # well before the 400 iterations or 3 minutes that would also stop it.
    evals = [e["accuracy"] for e in read_events(os.path.join(run, "agents", "virginia-w0.jsonl"))
             if e["ev"] == "eval"]
    assert max(evals) >= 0.9, evals
    assert (status["status"], status["stopped_by"], status["target_reached"]) == \
        ("completed", "target_accuracy", True), status
    assert (summary["stopped_by"], summary["target_reached"]) == ("target_accuracy", True)
    assert summary["target_accuracy"] == 0.9 and summary["time_to_target"] is not None
    assert 0 < summary["iterations"] < 400
    assert "completed, stopped by target_accuracy, target reached" in r.stdout
    assert summary["workers"] == 6
    b = summary["iteration_breakdown"]
    assert b["compute"] > 0 and b["comm"] > 0
    # Under BSP the server's neighbours wait for the far DC; tokyo's workers,
    # the last to start each round, spend their sync time on the WAN instead.
    for near in ("virginia-w0", "virginia-w1"):
        for far in ("tokyo-w0", "tokyo-w1"):
            assert mean_of(run, near, "wait") > mean_of(run, far, "wait")
            assert mean_of(run, near, "comm") < mean_of(run, far, "comm")
    # Every worker pushed through its DC's WAN link to the server in virginia.
    for link in ("frankfurt->virginia", "tokyo->virginia", "virginia->tokyo"):
        assert summary["wan"][link]["bytes"] > 0
    assert summary["environment"]["delay_backend"] in ("crelay", "relay", "netem")
    # The TCP the hosts ran: nothing sets it, so the machine's default.
    default = open(network.CONGESTION_CONTROL).read().strip()
    assert summary["environment"]["tcp_congestion_control"] == default
    assert "TCP congestion control" in r.stdout
    # The machine's load, a sample a second, summed up over the agents' time.
    cpu_samples = read_events(os.path.join(run, "cpu_samples.jsonl"))
    assert len(cpu_samples) >= summary["wall_time"] - 2
    assert 0 < summary["cpu"]["busy"] <= 1 and 0 <= summary["cpu"]["saturated"] <= 1
    assert 0 <= summary["cpu"]["stolen"] <= 1 - summary["cpu"]["busy"]
    # The summary wraps long values to the terminal's width (80 columns without one):
    # read as words, without the table's rules between a value's lines.
    assert "taken by the hypervisor" in " ".join(w for w in r.stdout.split() if w != "│")
    assert "machine CPU" in r.stdout
    for png in ("accuracy.png", "iteration_time.png", "links.png", "overlay.png"):
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


def test_killing_a_worker_fails_the_run_naming_it_and_cleanly(tmp_path):
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
        mine = os.path.join(only_run_in(runs), "agents", "tokyo-w1.json").encode()
        victim = next(int(p) for p in os.listdir("/proc") if p.isdigit() and
                      mine in open(f"/proc/{p}/cmdline", "rb").read())
        run_id = json.load(open(os.path.join(only_run_in(runs), "env.json")))["run_id"]
        os.kill(victim, signal.SIGKILL)
        # The run stops on the dead agent, long before its 5-minute limit.
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "tokyo-w1" in err and "SIGKILL" in err and "Traceback" not in err
    run = only_run_in(runs)
    status = json.load(open(os.path.join(run, "status.json")))
    assert (status["status"], status["stopped_by"]) == ("failed", "agent-failure")
    assert sum(e["ev"] == "iter" for e in read_events(events_path)) >= 5
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "failed"
    assert root_links_with(f"tb{run_id}") == []


def test_evaluations_on_wall_time_test_a_copy_of_the_global_model_every_period(tmp_path):
    from tests.mininet.helpers import run_topology
    text = open(QUICKSTART).read().replace(
        "  sync: ssgd\n", "  sync: fedavg\n  sync_options: {local_steps: 3}\n  eval_period: 1s\n")
    text = text.replace("stop: {accuracy: 0.9, iterations: 400, time: 3min}",
                        "stop: {iterations: 30, time: 3min}")
    run, summary = run_topology(tmp_path, "wall", text)
    assert summary["iterations"] == 30
    evals = [e for e in read_events(os.path.join(run, "agents", "virginia-w0.jsonl"))
             if e["ev"] == "eval"]
    timed = [e for e in evals if "at" in e]
    # Every period (1 s) of a run of several seconds, each on a model taken once a round
    # ended, tested after it was taken and in the order they were taken.
    assert len(timed) >= 3
    assert all(e["at"] <= e["t"] for e in timed)
    assert [e["at"] for e in timed] == sorted(e["at"] for e in timed)
    assert min(b["t"] - a["t"] for a, b in zip(timed, timed[1:])) >= 0.9
    # And the last model, tested where training ended.
    assert evals[-1]["it"] == 30 and "at" not in evals[-1]
    assert summary["final_accuracy"] == evals[-1]["accuracy"]
