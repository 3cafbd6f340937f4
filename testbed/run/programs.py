"""Running a command workload's programs in their hosts: one process per
host, in the host's network and mount namespaces, as an unprivileged user,
each the leader of its own process group (so ending it ends whatever it
started: torchrun's workers, a Flower app's processes), its output in the
run folder:

    RUN/programs/HOST.out, HOST.err    what it printed
    RUN/programs/HOST.metrics.jsonl    JSON lines it wrote to $TESTBED_METRICS
    RUN/programs/metrics.jsonl         the same lines as they arrived, with `host` and
                                       `t` (monotonic seconds) added by the runner
    RUN/programs.json                  each process's rank, command and environment

A process's environment is the runner's less what only root needs, plus
what standard launchers read (RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT: rank 0's host) and the
testbed's own (TESTBED_HOST, TESTBED_DC, TESTBED_IP, TESTBED_IFNAME,
TESTBED_PEERS as host=ip pairs, TESTBED_METRICS, TESTBED_RUN), and the
virtualenv's bin first on PATH.  GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME
and TP_SOCKET_IFNAME name the host's interface on the emulated network
(a program's own `env` may set them otherwise): found by the machine's
host name, which every namespace shares, gloo would pick an address the
emulated network does not reach.
"""

import json
import os
import pwd
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from agents.events import EventTail
from testbed.run import runend

STOP_GRACE = 5.0         # seconds a program gets to exit on SIGTERM before SIGKILL


class ProgramError(RuntimeError):
    """A program could not be started; the text says why."""


@dataclass
class Process:
    host: str
    dc: str
    ip: str
    ifname: str
    rank: int
    command: str
    env: dict


def user_of(name):
    """(name, uid, gid, home) of the user programs run as: `name`, else the
    user who ran sudo, else root."""
    name = name or os.environ.get("SUDO_USER") or "root"
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ProgramError(f"no user {name!r} to run the programs as") from None
    return entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir


def plan(exp, hosts, folder, user_home):
    """[Process] of every program's hosts in rank order; `hosts` is
    {name: (dc, ip, interface)}."""
    chosen = [(h, spec) for spec in exp.programs for h in spec.hosts]
    world = len(chosen)
    master = hosts[chosen[0][0]][1]
    peers = ",".join(f"{h}={hosts[h][1]}" for h, _ in chosen)
    base = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    path = os.pathsep.join([os.path.dirname(sys.executable), base.get("PATH", "/usr/bin:/bin")])
    out = []
    for rank, (host, spec) in enumerate(chosen):
        dc, ip, ifname = hosts[host]
        metrics = os.path.join(folder.path, "programs", f"{host}.metrics.jsonl")
        fields = {"rank": rank, "world_size": world, "master_addr": master,
                  "master_port": exp.master_port, "host": host, "dc": dc, "ip": ip,
                  "run_dir": folder.path, "metrics": metrics}
        env = {**base, "PATH": path, "HOME": user_home, "PYTHONUNBUFFERED": "1",
               "GLOO_SOCKET_IFNAME": ifname, "NCCL_SOCKET_IFNAME": ifname, "TP_SOCKET_IFNAME": ifname,
               "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": "0",
               "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": master, "MASTER_PORT": str(exp.master_port),
               "TESTBED_HOST": host, "TESTBED_DC": dc, "TESTBED_IP": ip, "TESTBED_IFNAME": ifname,
               "TESTBED_PEERS": peers,
               "TESTBED_METRICS": metrics, "TESTBED_RUN": folder.path, **dict(spec.env)}
        out.append(Process(host, dc, ip, ifname, rank, spec.command.format(**fields), env))
    return out


class Running:
    """The part of Popen the runner uses, for a program's process group."""

    def __init__(self, proc):
        self.proc = proc
        self.pid = proc.pid
        self.began = time.monotonic()
        self.ended = None              # when it was first seen to have exited
        self.stopped = False           # ended by the testbed while it still ran

    @property
    def returncode(self):
        return self.proc.returncode

    def poll(self):
        code = self.proc.poll()
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
        return code

    def wait(self, timeout=None):
        return self.proc.wait(timeout)

    def send_signal(self, sig):
        try:
            os.killpg(self.pid, sig)      # the program and all it started
        except ProcessLookupError:
            pass

    def terminate(self):
        if self.poll() is None:
            self.stopped = True
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def as_user(uid, gid):
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups", "--"]


def check_access(user, cwd, metrics):
    """ProgramError unless `user` can enter `cwd` and write `metrics`."""
    name, uid, gid, _ = user
    r = subprocess.run(as_user(uid, gid) + ["sh", "-c", 'cd "$1" && test -w "$2"', "sh", cwd, metrics],
                       capture_output=True)
    if r.returncode != 0:
        raise ProgramError(f"user {name} cannot enter {cwd} (where the programs run) or write "
                           f"{metrics}: give them access, or name another user (experiment.user)")


def workdir(spec):
    """The folder the programs run in: experiment.workdir from topo.yaml's."""
    path = os.path.normpath(os.path.join(os.path.dirname(spec.source), spec.experiment.workdir))
    if not os.path.isdir(path):
        raise ProgramError(f"experiment.workdir: no folder {path} to run the programs in")
    return path


def start(processes, net, folder, user, cwd):
    """Start every planned process in its host: [(Process, Running, err path)]."""
    name, uid, gid, _ = user
    os.makedirs(os.path.join(folder.path, "programs"), exist_ok=True)
    for p in processes:
        metrics = p.env["TESTBED_METRICS"]
        open(metrics, "a").close()
        os.chown(metrics, uid, gid)          # theirs to write
    check_access(user, cwd, processes[0].env["TESTBED_METRICS"])
    started = []
    for p in processes:
        out, err = (os.path.join(folder.path, "programs", f"{p.host}.{ext}") for ext in ("out", "err"))
        argv = ["nsenter", "--target", str(net.node(p.host).pid), "--net", "--mount", f"--wd={cwd}", "--",
                *as_user(uid, gid), "sh", "-c", p.command]
        with open(out, "wb") as o, open(err, "wb") as e:
            try:
                proc = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                        env=p.env, cwd=cwd, start_new_session=True)
            except OSError as ex:
                raise ProgramError(f"cannot start the program on {p.host}: {ex}") from None
        started.append((p, Running(proc), err))
    record(folder, started, name)
    return started


class MetricsTail:
    """Stamps each line a program writes to its metrics file with its host
    and the time the runner saw it, into RUN/programs/metrics.jsonl:
    programs need not keep a clock of the testbed's."""

    def __init__(self, folder, started):
        self.out = os.path.join(folder.path, "programs", "metrics.jsonl")
        self.tails = [(p.host, EventTail(p.env["TESTBED_METRICS"])) for p, _, _ in started]

    def collect(self):
        now = time.monotonic()
        lines = [{**line, "host": host, "t": now} for host, tail in self.tails
                 for line in tail.read() if isinstance(line, dict)]
        if lines:
            with open(self.out, "a") as f:
                f.write("".join(json.dumps(line) + "\n" for line in lines))


def record(folder, started, user):
    """programs.json: each process's rank, command, user, and, once it
    ended, its exit code and seconds."""
    folder.write_json("programs.json", [
        {"host": p.host, "dc": p.dc, "ip": p.ip, "rank": p.rank, "command": p.command, "user": user,
         "pid": r.pid, "code": r.poll(),
         "seconds": None if r.ended is None else r.ended - r.began} for p, r, _ in started])


def conclude(seen, detail, max_time, started):
    """The RunEnd of a run of programs."""
    if seen == runend.WORKERS_FINISHED:
        return runend.RunEnd("completed", "programs", None, "every program exited with code 0")
    if seen == runend.TIME:
        left = [p.host for p, r, _ in started if r.stopped]
        return runend.RunEnd("failed", runend.TIME, None,
                             f"the time limit of {max_time:g}s ended the programs still running on "
                             f"{', '.join(left) or 'no host'}")
    return runend.conclude(seen, detail)
