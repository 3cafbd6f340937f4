"""Agents forked by the launcher: each in its host's namespaces, training
for real, a dead one caught as before, and nothing left afterwards."""

import json
import os
import signal
import subprocess
import time

import pytest

from agents.events import read_events
from testbed import spec as S
from testbed.emulation import state as statemod
from testbed.run import runend, runner
from tests.mininet.helpers import cli_argv, cmdlines_with, east_west, interruptible, processes_in, since_boot

pytestmark = pytest.mark.mininet
SMALL = east_west("forked", """
    workload: train
    model: mlp
    dataset: digits
    eval_every: 5
    stop: {iterations: ITERATIONS, time: 5min}
""", bw="50mbit", delay="5ms")
AGENTS = ("east-s0", "east-w0", "west-w0", "east-c")


def small(tmp_path, iterations):
    path = tmp_path / "forked.yaml"
    path.write_text(SMALL.replace("ITERATIONS", str(iterations)))
    return path


def ppid(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def ns(pid, kind):
    return os.stat(f"/proc/{pid}/ns/{kind}").st_ino


def agent_pids(folder):
    """{agent name: pid} of the live processes running an agent of this run."""
    return {name: pid for name in AGENTS
            for pid in cmdlines_with(folder.agent_file(name, "json"))}


def launcher_of(state):
    """The launcher's identity, as the run state records it."""
    (ident,) = [i for i in state["processes"] if "agents.launcher" in " ".join(i["cmd"])]
    return ident


def wait_for(what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


def assert_nothing_left(folder, launcher, st, ending):
    """Nothing of the run is left; its teardown began after `ending` (since_boot())."""
    assert not statemod.matches(launcher), "the launcher outlives its run"
    assert cmdlines_with(folder.agents) == [], "an agent outlives its run"
    assert processes_in(set(st["netns"]), ending) == []


@pytest.mark.timeout(300)
def test_forked_agents_sit_in_their_hosts_namespaces_and_train(tmp_path):
    seen = {}

    def inspect(commands):
        net = commands.net
        launcher = launcher_of(net.state.data)
        wait_for(lambda: len(agent_pids(folder)) == len(AGENTS))
        pids = agent_pids(folder)
        for name, pid in pids.items():
            host = "east-r" if name == "east-c" else name
            shell = net.node(host).pid
            # A child of the launcher, in its host's network and mount namespaces.
            seen[name] = (ppid(pid) == launcher["pid"], ns(pid, "net") == ns(shell, "net"),
                          ns(pid, "mnt") == ns(shell, "mnt"), ns(pid, "net") != ns(os.getpid(), "net"))
            # Recorded in the run state, so `testbed clean` finds it.
            assert any(i["pid"] == pid for i in net.state.data["processes"])
        seen["launcher"] = launcher
        seen["state"] = dict(net.state.data)
        seen["ending"] = since_boot()

    folder = None

    def on_folder(f):
        nonlocal folder
        folder = f

    outcome = runner.run(S.load(str(small(tmp_path, 20))), str(tmp_path / "runs"), show=lambda line: None,
                         say=lambda line: None, on_folder=on_folder, console=inspect)
    assert {n: seen[n] for n in AGENTS} == {n: (True, True, True, True) for n in AGENTS}
    assert (outcome.status, outcome.stopped_by) == ("completed", runend.ITERATIONS), outcome.reason
    # torch trained in the forked workers: every worker logged its 20 iterations with a loss.
    for w in ("east-w0", "west-w0"):
        iters = [e for e in read_events(folder.agent_file(w, "jsonl")) if e["ev"] == "iter"]
        assert [e["it"] for e in iters] == list(range(20)) and all(e["loss"] > 0 for e in iters)
    evals = [e for e in read_events(folder.agent_file("east-w0", "jsonl")) if e["ev"] == "eval"]
    assert evals and evals[-1]["accuracy"] > evals[0]["accuracy"] - 0.2
    ups = [e for e in read_events(folder.file("runner.jsonl")) if e["ev"] == "network_up"]
    assert len(ups) == 1 and ups[0]["agent_start"] == "launcher"
    assert_nothing_left(folder, seen["launcher"], seen["state"], seen["ending"])


@pytest.mark.timeout(300)
def test_killing_a_forked_worker_is_caught_as_a_dead_agent(tmp_path):
    seen = {}
    folder = None

    def on_folder(f):
        nonlocal folder
        folder = f

    def kill_a_worker(commands):
        seen["launcher"] = launcher_of(commands.net.state.data)
        seen["state"] = dict(commands.net.state.data)
        events = folder.agent_file("west-w0", "jsonl")
        wait_for(lambda: sum(e["ev"] == "iter" for e in read_events(events)) >= 3)
        seen["ending"] = since_boot()
        os.kill(agent_pids(folder)["west-w0"], signal.SIGKILL)

    outcome = runner.run(S.load(str(small(tmp_path, 100000))), str(tmp_path / "runs"), show=lambda line: None,
                         say=lambda line: None, on_folder=on_folder, console=kill_a_worker)
    assert (outcome.status, outcome.stopped_by) == ("failed", runend.AGENT_FAILURE)
    assert outcome.reason.startswith("agent west-w0 was killed by SIGKILL"), outcome.reason
    assert_nothing_left(folder, seen["launcher"], seen["state"], seen["ending"])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_the_agents_and_the_launcher_end_with_the_runner(tmp_path, how):
    """Ctrl-C tears down as before; a runner killed outright takes the
    launcher and its agents with it (what is left for `testbed clean` is
    the network alone)."""
    path = small(tmp_path, 100000)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(cli_argv("run", str(path), "--runs", str(runs)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=interruptible)
    rid = st = None
    try:
        run = wait_for(lambda: os.listdir(runs) if runs.exists() else None)[0]
        agents = os.path.join(runs, run, "agents")
        events = os.path.join(agents, "west-w0.jsonl")
        wait_for(lambda: sum(e["ev"] == "iter" for e in read_events(events)) >= 2, timeout=120)
        with open(os.path.join(runs, run, "env.json")) as f:
            rid = json.load(f)["run_id"]
        with open(os.path.join(statemod.STATE_ROOT, rid, "state.json")) as f:
            st = json.load(f)
        launcher = launcher_of(st)
        assert len(cmdlines_with(agents)) == len(AGENTS)
        proc.send_signal(how)
        proc.wait(timeout=120)
        wait_for(lambda: not statemod.matches(launcher) and not cmdlines_with(agents), timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        if how == signal.SIGKILL and rid:
            statemod.remove_run(rid, st)      # the network, which `testbed clean` would remove
