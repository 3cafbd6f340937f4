"""`testbed clean` signals and removes only what is provably a run's own.

Real processes and, where the machine allows, real network namespaces; no
Mininet and no network is built.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from testbed.emulation import state as S
from testbed.records.runfolder import RunFolder


# ------------------------------------------------------------ command lines

def test_unwrap_strips_mnexec_with_its_options():
    assert S.unwrap(["mnexec", "-da", "4242", "/v/bin/python", "-m", "agents", "worker"]) == \
        ["/v/bin/python", "-m", "agents", "worker"]
    assert S.unwrap(["/usr/bin/mnexec", "-a", "7", "-g", "grp", "-r", "9", "iperf3", "-s"]) == \
        ["iperf3", "-s"]
    assert S.unwrap(["mnexec", "-cdn", "env", "PS1=\x7f", "bash", "--norc", "-is", "mininet:x"]) == \
        ["bash", "--norc", "-is", "mininet:x"]


def test_unwrap_leaves_other_commands_as_they_are():
    assert S.unwrap(["bash", "-c", "mnexec -da 1 x"]) == ["bash", "-c", "mnexec -da 1 x"]
    assert S.unwrap([]) == []


def test_named_run_takes_only_the_testbeds_own_names():
    assert S.named_run(["bash", "--norc", "--noediting", "-is", "mininet:tb1a2bh0"]) == "1a2b"
    assert S.named_run(["python", "-m", "testbed.emulation.relay", "--a", "x",
                        "--tag", "tb00ff"]) == "00ff"
    # Similar names that are not the testbed's.
    assert S.named_run(["bash", "-is", "mininet:h1"]) is None
    assert S.named_run(["bash", "-is", "mininet:tbkeep0"]) is None
    assert S.named_run(["bash", "-is", "mininet:tb1a2bh0", "extra"]) is None
    assert S.named_run(["vim", "mininet:tb1a2bh0"]) is None
    assert S.named_run(["python", "tool.py", "--tag", "tb1a2b"]) is None
    assert S.named_run(["python", "-m", "testbed.emulation.relay", "--tag", "tb1a2bx"]) is None


def test_named_run_knows_the_compiled_delay_line_by_its_program_and_tag():
    assert S.named_run(["/opt/venv/bin/testbed-delayline", "--tag", "tb00ff",
                        "--link", "a=x,b=y,control=/run/s"]) == "00ff"
    assert S.named_run(["/opt/venv/bin/testbed-delayline", "--tag", "tb00ffx"]) is None
    assert S.named_run(["/opt/venv/bin/other-program", "--tag", "tb00ff"]) is None


# ------------------------------------------------------------ identities

@pytest.fixture
def stranger():
    """A live process that is not the testbed's."""
    proc = subprocess.Popen(["sleep", "60"])
    deadline = time.monotonic() + 5
    while S.command(proc.pid) != ["sleep", "60"] and time.monotonic() < deadline:
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


def test_identity_matches_only_the_same_process(stranger):
    ident = S.identity(stranger.pid)
    assert ident == {"pid": stranger.pid, "start": S.start_time(stranger.pid), "cmd": ["sleep", "60"]}
    assert S.matches(ident)
    assert not S.matches({**ident, "start": ident["start"] - 1})   # the pid was reused
    assert not S.matches({**ident, "cmd": ["sleep", "61"]})
    stranger.kill()
    stranger.wait()
    assert not S.matches(ident)


def test_a_reused_pid_is_never_signalled(stranger):
    stale = {**S.identity(stranger.pid), "start": S.start_time(stranger.pid) - 1}
    assert S.signal_process(stale, signal.SIGKILL) is False
    time.sleep(0.1)
    assert stranger.poll() is None
    assert S.signal_process(S.identity(stranger.pid), signal.SIGKILL) is True
    assert stranger.wait(timeout=5) == -signal.SIGKILL


# ------------------------------------------------------------ namespaces

def _unshare_net():
    """argv prefix that runs a command in a new network namespace, or None."""
    for argv in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which("unshare") and subprocess.run(argv + ["true"], capture_output=True).returncode == 0:
            return argv
    return None


@pytest.fixture
def namespaced():
    """Start a shell command in a network namespace of its own; yields a
    function that returns its pid once it runs."""
    unshare = _unshare_net()
    if unshare is None:
        pytest.skip("this machine does not let us create a network namespace")
    procs = []

    def start(script):
        proc = subprocess.Popen(unshare + ["sh", "-c", script])
        procs.append(proc)
        assert _wait_for(lambda: S.netns_inode(proc.pid) != S.netns_inode(os.getpid()))
        return proc.pid

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _wait_for(predicate):
    deadline = time.monotonic() + 5
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def test_a_listed_namespace_that_is_someone_elses_now_is_left_alone(namespaced):
    pid = namespaced("sleep 60")
    # A stale state file naming that namespace's inode (as if it were reused).
    data = {"netns": [S.netns_inode(pid)], "links": ["tb1a2bs0", "tb1a2bh0-eth0"], "processes": []}
    assert pid not in [i["pid"] for i in S.processes_of("1a2b", data)]


def test_a_listed_namespace_that_holds_the_runs_interface_is_the_runs(namespaced):
    pid = namespaced("ip link add tb1a2bs0 type bridge && sleep 60")
    assert _wait_for(lambda: "tb1a2bs0" in S.interfaces_of(pid))
    data = {"netns": [S.netns_inode(pid)], "links": ["tb1a2bs0"], "processes": []}
    assert pid in [i["pid"] for i in S.processes_of("1a2b", data)]
    # Another run's names do not make it this run's.
    other = {"netns": [S.netns_inode(pid)], "links": ["tbffffs0"], "processes": []}
    assert pid not in [i["pid"] for i in S.processes_of("ffff", other)]


def test_the_host_namespace_is_never_a_runs_even_when_listed():
    data = {"netns": [S.netns_inode(os.getpid()), S.netns_inode(1)],
            "links": S.root_links(), "processes": []}
    assert S.processes_of("1a2b", data) == []


# ------------------------------------------------------------ clean, end to end

@pytest.fixture
def state_root(tmp_path, monkeypatch):
    root = tmp_path / "state"
    root.mkdir()
    monkeypatch.setattr(S, "STATE_ROOT", str(root))
    return root


def _dead_identity():
    proc = subprocess.Popen(["true"])
    ident = S.identity(proc.pid) or {"pid": proc.pid, "start": 1, "cmd": ["true"]}
    proc.wait()
    return ident


def _running_folder(tmp_path):
    path = tmp_path / "run"
    (path / "agents").mkdir(parents=True)
    RunFolder(str(path)).set_status("running")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path / "control.sock"))
    sock.close()
    return path


def test_clean_of_a_killed_run_spares_a_reused_pid_and_marks_the_run_killed(
        tmp_path, state_root, stranger):
    run_dir = _running_folder(tmp_path)
    reused = {**S.identity(stranger.pid), "start": S.start_time(stranger.pid) - 5}
    data = {"run_id": "1a2b", "runner": _dead_identity(), "run_dir": str(run_dir),
            "netns": [], "links": ["tb1a2bs0"], "processes": [reused]}
    (state_root / "1a2b").mkdir()
    (state_root / "1a2b" / "state.json").write_text(json.dumps(data))

    before = time.time()
    report, skipped = S.clean()

    assert skipped == set() and report["1a2b"]["processes"] == 0
    assert report["1a2b"]["killed"] is True
    assert stranger.poll() is None
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "killed" and status["wall"] >= before
    assert "died" in status["reason"]
    assert not (run_dir / "control.sock").exists()
    assert not (state_root / "1a2b").exists()
    again, _ = S.clean()
    assert "1a2b" not in again


def test_clean_leaves_a_run_with_a_live_runner_and_its_status_alone(tmp_path, state_root, stranger):
    run_dir = _running_folder(tmp_path)
    data = {"run_id": "1a2b", "runner": S.identity(stranger.pid), "run_dir": str(run_dir),
            "netns": [], "links": [], "processes": []}
    (state_root / "1a2b").mkdir()
    (state_root / "1a2b" / "state.json").write_text(json.dumps(data))
    report, skipped = S.clean()
    assert skipped == {"1a2b"} and "1a2b" not in report
    assert json.loads((run_dir / "status.json").read_text())["status"] == "running"
    assert (run_dir / "control.sock").exists()


def test_a_status_the_runner_wrote_is_kept(tmp_path, state_root):
    run_dir = _running_folder(tmp_path)
    RunFolder(str(run_dir)).set_status("completed", "workers finished")
    data = {"run_id": "1a2b", "runner": _dead_identity(), "run_dir": str(run_dir),
            "netns": [], "links": [], "processes": []}
    (state_root / "1a2b").mkdir()
    (state_root / "1a2b" / "state.json").write_text(json.dumps(data))
    report, _ = S.clean()
    assert report["1a2b"]["killed"] is False
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
