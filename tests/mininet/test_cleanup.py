"""Runs leave nothing behind: normal exit, Ctrl-C, SIGKILL + `testbed clean`."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from agents.events import read_events
from testbed.emulation import state as statemod
from tests.mininet.helpers import (ROOT, cli_argv, cmdlines_with, east_west,
                                   interruptible, processes_in, root_links_with, since_boot)

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")
# Small and long: two DCs, probes on, a WAN delay (so relays where the kernel
# lacks netem), a synthetic model so agents start without torch.
KILLED = east_west("killed", """
    workload: synthetic
    model: flat-100000
    compute_time: 100ms
    stop: {iterations: 1000000, time: 10min}
    probe: {period: 1s, budget: 5%}
""")


def read_state(rid):
    with open(os.path.join(statemod.STATE_ROOT, rid, "state.json")) as f:
        return json.load(f)


def start_net():
    """`testbed net` as a user runs it; returns (process, run id, state)."""
    proc = subprocess.Popen(cli_argv("net", QUICKSTART), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        line = proc.stdout.readline() if ready else ""
        if line.startswith("network up: run "):
            rid = line.split()[3].rstrip(",")
            return proc, rid, read_state(rid)
        if proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"testbed net did not come up: {proc.stderr.read()}")


def run_interfaces(st):
    """Interfaces of the run, wherever its live recorded processes see them."""
    names = set()
    for ident in st["processes"]:
        if statemod.matches(ident):
            names |= statemod.interfaces_of(ident["pid"])
    return names & set(st["links"])


def assert_gone(rid, st, ending):
    """Nothing of run `rid` is left; its teardown began at `ending` (since_boot())."""
    prefix = f"tb{rid}"
    assert root_links_with(prefix) == []
    assert [i for i in st["processes"] if statemod.matches(i)] == []
    assert processes_in(set(st["netns"]), ending) == []
    assert run_interfaces(st) == set()
    assert not os.path.exists(os.path.join(statemod.STATE_ROOT, rid))
    assert cmdlines_with(prefix) == []


def console(proc, line):
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def test_exit_in_the_console_tears_everything_down():
    proc, rid, st = start_net()
    # The bridges exist while it runs, inside the run's namespaces only.
    assert set(st["bridges"]) <= run_interfaces(st)
    assert root_links_with(f"tb{rid}") == []
    ending = since_boot()
    console(proc, "exit")
    assert proc.wait(timeout=60) == 0
    assert_gone(rid, st, ending)


def test_ctrl_c_tears_everything_down():
    proc, rid, st = start_net()
    ending = since_boot()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert_gone(rid, st, ending)


def test_sigkill_of_the_runner_then_testbed_clean_leaves_nothing():
    proc, rid, st = start_net()
    # A daemon inside a host: it outlives the runner and must still be found.
    console(proc, "sh tokyo-w0 iperf3 -s -D")
    time.sleep(0.5)
    # Someone else's interface with a similar name must survive.
    subprocess.run(["ip", "link", "add", "tbkeep0", "type", "veth", "peer", "name", "tbkeep1"],
                   check=True)
    try:
        ending = since_boot()
        proc.kill()
        proc.wait()
        time.sleep(0.5)
        assert processes_in(set(st["netns"]), ending), "the daemon and the namespaces outlive the runner"
        r = subprocess.run(cli_argv("clean"), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert f"run {rid}" in r.stdout
        assert_gone(rid, st, ending)
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
        assert set(st["bridges"]) <= run_interfaces(st)
        console(proc, "ping virginia-w0 tokyo-w0")
        ending = since_boot()
        console(proc, "exit")
        out, _ = proc.communicate(timeout=60)
        assert "virginia-w0 -> tokyo-w0:" in out
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_gone(rid, st, ending)


def wait_until_all_agents_run(runs):
    """(run folder, agent names) once every agent has logged its start."""
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        folders = os.listdir(runs) if runs.exists() else []
        if folders:
            run = os.path.join(runs, folders[0])
            agents = os.path.join(run, "agents")
            names = [f[:-5] for f in os.listdir(agents) if f.endswith(".json")]
            if os.path.exists(os.path.join(run, "env.json")) and names and all(
                    any(e["ev"] == "start" for e in read_events(os.path.join(agents, f"{n}.jsonl")))
                    for n in names):
                return run, names
        time.sleep(0.3)
    raise AssertionError("the agents did not all start")


def test_sigkill_of_a_run_then_testbed_clean_leaves_nothing_and_the_run_says_killed(tmp_path):
    topo = tmp_path / "killed.yaml"
    topo.write_text(KILLED)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(cli_argv("run", str(topo), "--runs", str(runs)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=interruptible)
    try:
        run, names = wait_until_all_agents_run(runs)
        rid = json.load(open(os.path.join(run, "env.json")))["run_id"]
        st = read_state(rid)
        assert {"east-p", "east-s0", "east-w0", "west-p", "west-w0"} <= set(names)
        assert os.path.exists(os.path.join(run, "control.sock"))
        # Only the orchestrator dies.  Its agents die with it (their launcher
        # does, and they with the launcher); the network and relays live on.
        ending = since_boot()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at = time.time()
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 15
    while cmdlines_with(os.path.join(run, "agents")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cmdlines_with(os.path.join(run, "agents")) == [], "agents outlive the orchestrator"
    if st.get("delay_backend") in ("relay", "crelay"):
        assert cmdlines_with(f"--tag\x00tb{rid}"), "the relays outlive the orchestrator"
    assert json.load(open(os.path.join(run, "status.json")))["status"] == "running"

    r = subprocess.run(cli_argv("clean"), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"run {rid}: stopped" in r.stdout and "marked killed" in r.stdout

    assert_gone(rid, st, ending)
    assert cmdlines_with(os.path.join(run, "agents")) == []
    assert not os.path.exists(os.path.join(run, "control.sock"))
    status = json.load(open(os.path.join(run, "status.json")))
    assert status["status"] == "killed" and status["wall"] >= killed_at


@pytest.mark.timeout(120)
def test_a_node_whose_shell_died_does_not_hang_teardown():
    from testbed.emulation import network
    from tests.mininet.helpers import spec_of
    net = network.build(spec_of("""
    datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
    wan: [{between: [east, west], bw: 20mbit, delay: 5ms}]
    """))
    rid = net.state.run_id
    st = read_state(rid)
    shell = net.node("east-w0").shell
    os.kill(shell.pid, signal.SIGKILL)
    shell.wait()
    ending = since_boot()
    net.stop()           # Mininet alone would wait for this shell's prompt forever
    assert_gone(rid, st, ending)


def test_clean_spares_a_run_that_begins_while_it_sweeps(monkeypatch):
    """`testbed clean` lists the runs' states, then looks for processes named
    for a run with none.  A run that begins between the two must be left
    alone: here the listing is made to miss it, as if it came just after."""
    from testbed.emulation import network
    from tests.mininet.helpers import spec_of
    with network.build(spec_of("""
    datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
    wan: [{between: [east, west], bw: 20mbit, delay: 5ms}]
    """)) as net:
        rid = net.state.run_id
        listdir = os.listdir
        monkeypatch.setattr(statemod.os, "listdir",
                            lambda path: [] if path == statemod.STATE_ROOT else listdir(path))
        report, _ = statemod.clean()
        monkeypatch.undo()
        assert rid not in report
        assert net.failure() is None
        out = network.run_in(net.node("east-w0"), ["ping", "-c", "1", "-W", "2", net.ip("west-w0")],
                             check=False)
        assert " 0% packet loss" in out, out
