"""Runs leave nothing behind: normal exit, Ctrl-C, SIGKILL + `testbed clean`."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from testbed.emulation import state as statemod
from tests.mininet.helpers import ROOT, processes_in, root_links_with, cli_argv

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")


def start_net():
    """`testbed net` as a user runs it; returns (process, run id, state)."""
    proc = subprocess.Popen(cli_argv("net", QUICKSTART), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        line = proc.stdout.readline() if ready else ""
        if line.startswith("network up: run "):
            rid = line.split()[3].rstrip(",")
            with open(os.path.join(statemod.STATE_ROOT, rid, "state.json")) as f:
                return proc, rid, json.load(f)
        if proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"testbed net did not come up: {proc.stderr.read()}")


def assert_gone(rid, st):
    prefix = f"tb{rid}"
    assert root_links_with(prefix) == []
    assert processes_in(set(st["netns"])) == []
    assert not os.path.exists(os.path.join(statemod.STATE_ROOT, rid))
    relays = [p for p in os.listdir("/proc") if p.isdigit()
              and prefix in open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace")]
    assert relays == []


def console(proc, line):
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def test_exit_in_the_console_tears_everything_down():
    proc, rid, st = start_net()
    assert root_links_with(f"tb{rid}")  # the bridges exist while it runs
    console(proc, "exit")
    assert proc.wait(timeout=60) == 0
    assert_gone(rid, st)


def test_ctrl_c_tears_everything_down():
    proc, rid, st = start_net()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert_gone(rid, st)


def test_sigkill_of_the_runner_then_testbed_clean_leaves_nothing():
    proc, rid, st = start_net()
    # A daemon inside a host: it outlives the runner and must still be found.
    console(proc, "sh tokyo-w0 iperf3 -s -D")
    time.sleep(0.5)
    # Someone else's interface with a similar name must survive.
    subprocess.run(["ip", "link", "add", "tbkeep0", "type", "veth", "peer", "name", "tbkeep1"],
                   check=True)
    try:
        proc.kill()
        proc.wait()
        time.sleep(0.5)
        assert processes_in(set(st["netns"])), "the relays and the daemon outlive the runner"
        r = subprocess.run(cli_argv("clean"), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert f"run {rid}" in r.stdout
        assert_gone(rid, st)
        assert "tbkeep0" in root_links_with("tbkeep")
        again = subprocess.run(cli_argv("clean"), capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and f"run {rid}" not in again.stdout
    finally:
        subprocess.run(["ip", "link", "del", "tbkeep0"], capture_output=True)


def test_clean_leaves_a_running_experiment_alone():
    proc, rid, st = start_net()
    try:
        r = subprocess.run(cli_argv("clean"), capture_output=True, text=True, timeout=60)
        assert f"run {rid}: still running" in r.stdout
        assert root_links_with(f"tb{rid}")
        console(proc, "ping virginia-w0 tokyo-w0")
        console(proc, "exit")
        out, _ = proc.communicate(timeout=60)
        assert "virginia-w0 -> tokyo-w0:" in out
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_gone(rid, st)
