"""A run whose emulation breaks under it fails within seconds, saying
what broke, instead of running on to its time limit over a WAN that
forwards nothing."""

import json
import os
import signal
import subprocess
import time

import pytest

from agents.events import read_events
from tests.mininet.helpers import cli_argv, cmdlines_with, east_west, interruptible

pytestmark = pytest.mark.mininet


def started_run(tmp_path, name):
    """A `testbed run` of a long synthetic experiment, once its workers
    have finished an iteration: (process, run folder)."""
    topo = tmp_path / f"{name}.yaml"
    topo.write_text(east_west(name, """
        workload: synthetic
        stop: {iterations: 1000000, time: 5min}
        """))
    runs = tmp_path / "runs"
    proc = subprocess.Popen(cli_argv("run", str(topo), "--runs", str(runs)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=interruptible)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        folders = os.listdir(runs) if runs.exists() else []
        if folders:
            run = os.path.join(runs, folders[0])
            worker = os.path.join(run, "agents", "west-w0.jsonl")
            if os.path.exists(worker) and any(e["ev"] == "iter" for e in read_events(worker)):
                return proc, run
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the run did not get going: " + proc.stdout.read().decode()[-2000:])


def status_of(run):
    with open(os.path.join(run, "status.json")) as f:
        return json.load(f)


@pytest.mark.timeout(240)
def test_a_run_whose_delay_line_is_killed_fails_within_seconds_saying_so(tmp_path):
    proc, run = started_run(tmp_path, "killed-line")
    try:
        with open(os.path.join(run, "env.json")) as f:
            env = json.load(f)
        if env["delay_backend"] == "netem":
            pytest.skip("netem carries the delay in the kernel: there is no delay line to kill")
        (line,) = cmdlines_with(f"--tag\x00tb{env['run_id']}")
        os.kill(line, signal.SIGKILL)
        killed = time.time()
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    status = status_of(run)
    assert (status["status"], status["stopped_by"]) == ("failed", "emulation-failure"), status
    assert status["reason"] == "the delay line of WAN link 0 (east-west) was killed by SIGKILL"
    # Seen at the runner's next look, not at the time limit five minutes on: the
    # run was closed (its status written, before the report's plots) within seconds.
    took = status["wall"] - killed
    assert took < 10, (took, out.decode()[-2000:])
