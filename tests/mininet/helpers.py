"""Shared helpers for tests that build real emulated networks."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from testbed import spec as S
from testbed.emulation.state import start_time

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def topology(name):
    return S.load(os.path.join(ROOT, "topologies", f"{name}.yaml"))


def spec_of(text):
    return S.loads(textwrap.dedent(text))


def cli_argv(*args):
    return [sys.executable, "-m", "testbed.cli", *args]


def root_links_with(prefix):
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()
            if line.split(":")[1].strip().startswith(prefix)]


def since_boot():
    """Now, on the clock /proc/PID/stat gives processes' start times on."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def processes_in(netns_inodes, started_before):
    """Pids of the processes in the network namespaces with these inodes
    that started before `started_before` (since_boot()).  The kernel gives a
    freed namespace's inode number to the next one made, so once a run's
    namespaces are gone, a test running beside it may have processes in
    namespaces with the same numbers; those started after the run's
    teardown began, and are not the run's."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            start = start_time(pid)
            if os.stat(f"/proc/{pid}/ns/net").st_ino in netns_inodes and start is not None \
                    and start / os.sysconf("SC_CLK_TCK") < started_before:
                found.append(int(pid))
        except OSError:
            pass
    return found


def running(pid):
    """Whether a process still runs.  An orphan that has ended stays a zombie
    until init reaps it, which some inits do only every few seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def east_west(name, experiment, bw="20mbit", delay="10ms"):
    """topo.yaml text: east (a server and a worker) and west (a worker)
    joined by one WAN link, the PS in east under SSGD; `experiment`: the
    rest of the experiment section, as YAML lines."""
    return (f"name: {name}\n"
            "datacenters:\n"
            "  - {name: east, servers: 1, workers: 1}\n"
            "  - {name: west, workers: 1}\n"
            "wan:\n"
            f"  - {{between: [east, west], bw: {bw}, delay: {delay}}}\n"
            "experiment:\n  sync: ssgd\n  overlay: ps\n  server_dc: east\n"
            + textwrap.indent(textwrap.dedent(experiment).strip() + "\n", "  "))


def cmdlines_with(text):
    """Pids of the processes whose command line contains `text`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def run_topology(tmp_path, name, text, timeout=400):
    """`testbed run` of a topology text; (run folder, summary)."""
    topo = tmp_path / f"{name}.yaml"
    topo.write_text(text)
    runs = tmp_path / f"runs-{name}"
    r = subprocess.run(cli_argv("run", str(topo), "--runs", str(runs)), capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = os.listdir(runs)
    run = os.path.join(runs, run)
    with open(os.path.join(run, "summary.json")) as f:
        return run, json.load(f)


def interruptible():
    """preexec_fn for a child the test will Ctrl-C: started from a shell
    that runs the tests in the background, it would inherit SIGINT
    ignored, and Python keeps an ignored SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
