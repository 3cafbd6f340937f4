"""Run a pure function in a child process, one call at a time.

A re-plan of a large WAN takes on the order of a second of CPU.  In a
thread of the coordinator it holds the GIL most of that time, and the
coordinator's loop, which hands out a dispatched iteration's blocks as
the workers report them (hundreds of messages a second), gets the
interpreter back only at the switch interval after each wait on its
socket; a child process has its own interpreter.
`benchmarks/replan_offload.py` measures how long a message waits either
way.

The child is `python -m agents.planning.offload`, started on the first
call and kept for the next ones.  Calls and results are pickles framed by
their length on its stdin and stdout.  It dies with the thread that
started it (PR_SET_PDEATHSIG), so a coordinator killed outright leaves no
solver behind, and it exits when its stdin closes.  A call that takes over
the solver's `limit` ends the child and fails, so a hung solve ends the
run instead of leaving the coordinator waiting for a plan for ever.
"""

import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time

from agents.libc import die_with_parent, load_libc

HEADER = struct.Struct("!Q")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Seconds a call may take: a re-plan of the largest WAN takes a few.
SOLVE_LIMIT = 120.0


def _write(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def _read(stream):
    """The next framed pickle, or None at the end of the stream."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    size, = HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


class Call:
    """One call under way; `is_alive` and `join` as a thread's."""

    def __init__(self, solver):
        self.solver = solver
        self.outcome = None
        self.deadline = time.monotonic() + solver.limit

    def is_alive(self):
        if self.outcome is None:
            self._wait(0.0)
        return self.outcome is None

    def join(self):
        if self.outcome is None:
            self._wait(self.deadline - time.monotonic())

    def _wait(self, timeout):
        """Take the outcome if it comes within `timeout` seconds; past the
        deadline, end the child and fail."""
        ready, _, _ = select.select([self.solver.proc.stdout], [], [], max(0.0, timeout))
        if ready:
            self.outcome = _read(self.solver.proc.stdout) or ("error", "the solver process exited")
            self.solver.busy = False
        elif time.monotonic() >= self.deadline:
            self.solver.kill()
            self.outcome = ("error", f"no result after {self.solver.limit:g}s; the solver "
                                     "process was ended")

    def result(self):
        """The function's return value; its error raised here, as RuntimeError."""
        self.join()
        kind, value = self.outcome
        if kind == "error":
            raise RuntimeError(f"the solver process failed: {value}")
        return value


class Solver:
    """A child process calling `module.name(*args)` for the parent."""

    def __init__(self, limit=SOLVE_LIMIT):
        self.proc = None
        self.busy = False
        self.limit = limit

    def call(self, function, *args):
        """Start `function(*args)` (a module-level function) in the child: a `Call`."""
        if self.busy:
            raise RuntimeError("the solver process is busy with the last call")
        if self.proc is None or self.proc.poll() is not None:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
            self.proc = subprocess.Popen([sys.executable, "-m", "agents.planning.offload"], env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        _write(self.proc.stdin, (function.__module__, function.__qualname__, args))
        self.busy = True
        return Call(self)

    def kill(self):
        """End the child mid-call; the next call starts a new one."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc = None
        self.busy = False

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()        # the child exits at the end of its input
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()            # mid-solve: nothing of it is wanted
                self.proc.wait()
            self.proc.stdout.close()
            self.proc = None


def serve(stdin, stdout):
    while True:
        request = _read(stdin)
        if request is None:
            return
        module, name, args = request
        try:
            outcome = ("ok", getattr(importlib.import_module(module), name)(*args))
        except Exception as e:     # the parent raises it where it asks for the result
            outcome = ("error", f"{type(e).__name__}: {e}")
        _write(stdout, outcome)


if __name__ == "__main__":
    die_with_parent(load_libc(), signal.SIGKILL)
    if os.getppid() == 1:
        sys.exit(0)                 # the parent is gone already
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's to handle
    serve(sys.stdin.buffer, sys.stdout.buffer)
