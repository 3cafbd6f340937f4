"""Start agents by forking one interpreter that has already imported them.

An agent started on its own imports torch, numpy and ZeroMQ first: over a
second of CPU each, so a score of agents on two cores waits half a minute
before training.  The launcher imports all that once, then forks one child
per agent.  Each child is still its own process: it enters its host's
network and mount namespaces (as `mnexec -a` does), becomes its own
session, writes its output to its own log and runs `python -m agents ROLE
--config FILE`'s entry, exiting with its return code.

The protocol is JSON lines.  On stdin the launcher takes
  {"name", "role", "config", "log", "netns_pid"}   fork an agent
  {"pid", "signal"}                                signal one of its agents
and on stdout it reports
  {"ev": "started", "name", "pid"}   once the child sits in its namespaces
  {"ev": "exited", "name", "pid", "code"}   code as Popen.returncode gives it

Nothing outlives it: when its stdin closes (the runner is done, or died) or
it gets SIGTERM, it stops its agents (SIGTERM, then SIGKILL) and exits, and
a child gets SIGKILL the moment the launcher dies (PR_SET_PDEATHSIG).

`Launcher` is the runner's side: it starts the launcher process and hands
out, per agent, an object with the part of Popen the runner uses.
"""

import argparse
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback

from agents.libc import CLONE_NEWNET, CLONE_NEWNS, die_with_parent, load_libc, setns

STOP_GRACE = 3.0        # seconds agents get to exit on SIGTERM before SIGKILL
# The launcher's own command line carries this much blank room, which each
# child overwrites with its agent's command, so `ps` (and anything that finds
# an agent by its config path) sees what it would see without the launcher.
TITLE_ROOM = 2048
# What a fresh interpreter has; the launcher changes these for itself.
FRESH_HANDLERS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                  signal.SIGCHLD: signal.SIG_DFL, signal.SIGHUP: signal.SIG_DFL}


class LauncherError(RuntimeError):
    """The launcher could not start an agent; the text says why."""


# ------------------------------------------------------------ the launcher process


def preload():
    """Import what agents import, and no more: no ZeroMQ context, no thread
    of our own and no torch computation exists before a fork."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import zmq  # noqa: F401

    import agents.__main__  # noqa: F401
    from agents.coflow.policies import COFLOW
    from agents.models import DATASET, MODEL
    from agents.overlay import OVERLAY
    from agents.sync import SYNC
    from agents.workload import WORKLOAD
    for registry in (SYNC, OVERLAY, COFLOW, MODEL, DATASET, WORKLOAD):
        registry.builtin_classes()         # loaded by name later: import them now, once
    import agents.roles.coordinator  # noqa: F401
    import agents.roles.machine  # noqa: F401
    import agents.roles.probe  # noqa: F401
    import agents.roles.scheduler  # noqa: F401
    import agents.roles.server  # noqa: F401
    import agents.roles.worker  # noqa: F401


def set_title(argv):
    """Show argv as this process's command line, in the room its own
    command line has (the kernel reads one string up to the first NUL when
    the last byte of that room is not NUL)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])     # arg_start, arg_end
    room = end - start
    text = " ".join(argv).encode()[:room - 2]
    ctypes.memmove(start, text + b"\0" * (room - len(text) - 1) + b" ", room)


def run_child(libc, launcher_pid, req, ready_w):
    """In the forked child: become the agent.  Never returns."""
    code = 1
    try:
        # SIGKILL once the launcher is gone, unless it is gone already.
        die_with_parent(libc, signal.SIGKILL)
        if os.getppid() != launcher_pid:
            os._exit(1)
        signal.set_wakeup_fd(-1)
        for sig, handler in FRESH_HANDLERS.items():
            signal.signal(sig, handler)
        os.setsid()
        log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        cwd = os.getcwd()
        setns(libc, req["netns_pid"], "net", CLONE_NEWNET)
        setns(libc, req["netns_pid"], "mnt", CLONE_NEWNS)   # one thread: allowed
        try:
            os.chdir(cwd)        # a new mount namespace starts at its root
        except OSError:
            pass
        argv = [sys.executable, "-m", "agents", req["role"], "--config", req["config"]]
        set_title(argv)
        sys.argv = [os.path.join(os.path.dirname(__file__), "__main__.py")] + argv[3:]
        os.write(ready_w, b"\1")
        os.close(ready_w)
        from agents.__main__ import main
        try:
            code = main(argv[3:])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        # As an interpreter does: the traceback, then death by SIGINT.
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # noqa: BLE001 - the agent's log shows it, as without the launcher
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code if isinstance(code, int) and 0 <= code < 256 else 1)


class Server:
    """The launcher's loop: requests in, children forked, exits reported."""

    def __init__(self):
        self.libc = load_libc()
        self.children = {}       # pid -> name, until reaped
        self.stopping = False
        self.inbox = b""
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the runner's to handle

    def _stop(self, *_):
        self.stopping = True

    def report(self, **fields):
        try:
            os.write(1, (json.dumps(fields) + "\n").encode())
        except OSError:          # nobody listens any more
            self.stopping = True

    def serve(self):
        while not self.stopping:
            ready, _, _ = select.select([0, self.wake_r], [], [])
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
            self.reap()
            if 0 in ready:
                data = os.read(0, 65536)
                if not data:
                    break
                self.inbox += data
                *lines, self.inbox = self.inbox.split(b"\n")
                for line in lines:
                    if line.strip():
                        self.handle(json.loads(line))
        self.stop_children()

    def handle(self, req):
        if "signal" in req:
            # Only a child not yet reaped: its pid cannot belong to anyone else.
            if req["pid"] in self.children:
                try:
                    os.kill(req["pid"], req["signal"])
                except ProcessLookupError:
                    pass
            return
        ready_r, ready_w = os.pipe()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            os.close(self.wake_r)
            os.close(self.wake_w)
            run_child(self.libc, me, req, ready_w)
        os.close(ready_w)
        os.read(ready_r, 1)      # in its namespaces (or exited): only then is it reported
        os.close(ready_r)
        self.children[pid] = req["name"]
        self.report(ev="started", name=req["name"], pid=pid)

    def reap(self):
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            name = self.children.pop(pid, None)
            if name is not None:
                self.report(ev="exited", name=name, pid=pid, code=os.waitstatus_to_exitcode(status))

    def stop_children(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in list(self.children):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + STOP_GRACE
            while self.children and time.monotonic() < deadline:
                self.reap()
                time.sleep(0.02)
            if not self.children:
                return
        while self.children:
            self.reap()
            time.sleep(0.02)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m agents.launcher")
    p.add_argument("--parent", type=int, required=True, help="exit when this process dies")
    p.add_argument("room", nargs="?", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    server = Server()
    die_with_parent(server.libc, signal.SIGTERM)
    if os.getppid() != args.parent:
        return 1
    preload()
    import gc
    gc.freeze()      # keep the imported objects' pages shared with the children
    server.serve()
    return 0


# ------------------------------------------------------------ the runner's side


class Launcher:
    """A launcher process started from the calling (main) thread, which it
    does not outlive; `close()` stops it and every agent it started."""

    def __init__(self, stderr_path, env=None):
        with open(stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agents.launcher", "--parent", str(os.getpid()),
                 " " * TITLE_ROOM],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
                start_new_session=True)       # Ctrl-C reaches the runner alone
        self.stderr_path = stderr_path
        self.pid = self.proc.pid
        self.gone = False
        self.outbox = b""
        self.by_name = {}

    def start(self, requests):
        """Fork one agent per request; their handles, in order, once each
        sits in its host's namespaces."""
        handles = []
        for r in requests:
            handles.append(self.by_name.setdefault(r["name"], Agent(self, r["name"])))
        self._send(requests)
        while not self.gone and any(h.pid is None for h in handles):
            self.pump(None)
        missing = [h.name for h in handles if h.pid is None]
        if missing:
            raise LauncherError(f"the agent launcher exited (code {self.proc.poll()}) before "
                                f"starting {', '.join(missing)}; see {self.stderr_path}")
        return handles

    def signal(self, pid, sig):
        self._send([{"pid": pid, "signal": int(sig)}])

    def _send(self, requests):
        try:
            self.proc.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self.pump(0)         # it died: its exit (and so its agents') shows next

    def pump(self, timeout):
        """Take the reports that arrive within timeout (None: wait for one)."""
        if self.gone:
            return
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return
        data = os.read(fd, 65536)
        if not data:
            self._lost()
            return
        self.outbox += data
        *lines, self.outbox = self.outbox.split(b"\n")
        for line in lines:
            rep = json.loads(line)
            agent = self.by_name.get(rep["name"])
            if agent is None:
                continue
            if rep["ev"] == "started":
                agent.pid = rep["pid"]
            elif rep["ev"] == "exited":
                agent.returncode = rep["code"]

    def _lost(self):
        """The launcher is gone: its agents died with it (PR_SET_PDEATHSIG)."""
        self.gone = True
        self.proc.wait()
        for agent in self.by_name.values():
            if agent.returncode is None:
                agent.returncode = -signal.SIGKILL

    def close(self, grace=STOP_GRACE + 2.0):
        """Stop every agent still running and the launcher itself."""
        if self.gone:
            return
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + grace
        while not self.gone and time.monotonic() < deadline:
            self.pump(max(0.0, deadline - time.monotonic()))
        if not self.gone:
            self.proc.kill()     # its agents get SIGKILL as it dies
            while not self.gone:
                self.pump(None)


class Agent:
    """The part of subprocess.Popen the runner uses, for a forked agent;
    `returncode` is what the launcher reported when it reaped the agent."""

    def __init__(self, launcher, name):
        self.launcher = launcher
        self.name = name
        self.pid = None
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            self.launcher.pump(0)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"agent {self.name}", timeout)
            self.launcher.pump(left)
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            self.launcher.signal(self.pid, sig)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
