"""The two ways a WAN direction gets its delay, jitter and loss.

Both sit behind the same small interface: the leaf qdisc under the link's
HTB class, how to start, how to change a direction live, how to stop.

* ``NetemDelay``: the kernel's sch_netem as the leaf; changes are
  `tc qdisc change`.
* ``RelayDelay``: a byte FIFO as the leaf (the bottleneck queue) and a
  userspace relay process per link in a middle namespace that holds frames
  for the delay (testbed.emulation.relay); changes are messages to it.
* ``CompiledRelayDelay``: the same, with the compiled delay line
  (testbed-delayline, built from delayline.c by scripts/install.sh): one
  process per core, each serving a share of the WAN links; a process opens
  each of its links' sockets in that link's middle namespace and keeps one
  control socket per link (the same protocol).  A link's stats' cpu_s is
  its process's, shared by that process's links.
"""

import json
import os
import select
import socket
import subprocess
import sys
import time

from testbed.emulation import shaping

RELAY_START_TIMEOUT = 10.0
DELAYLINE_ENV = "TESTBED_DELAYLINE"      # path of the compiled delay line, if not in the venv


def delayline_binary():
    """Where the compiled delay line is expected: $TESTBED_DELAYLINE, else
    next to the interpreter (the virtualenv's bin, where install.sh puts it)."""
    return os.environ.get(DELAYLINE_ENV) or os.path.join(os.path.dirname(sys.executable),
                                                         "testbed-delayline")


def delayline_runs(path=None):
    """True if the compiled delay line exists and runs here."""
    path = path or delayline_binary()
    try:
        return subprocess.run([path, "--help"], capture_output=True, timeout=5,
                              check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class DelayError(RuntimeError):
    pass


def link_seed(spec, index):
    """The random seed of WAN link `index`'s jitter and loss draws: it follows
    the experiment's seed, so repeated seeds are different samples, and
    differs between links, so two links do not drop the same frames."""
    experiment_seed = spec.experiment.seed if spec.experiment is not None else 0
    return experiment_seed * 100_000 + index     # far more links than a spec holds


class NetemDelay:
    name = "netem"
    uses_relays = False
    description = "kernel sch_netem under each link's HTB class"

    def leaf(self, dev, direction, verb="add", **where):
        """where: parent and handle, if not the egress's one leaf (shaping)."""
        return shaping.netem_leaf(dev, direction, verb, **where)

    def start(self, net, plan, spec, state):
        pass

    def set(self, wan_plan, key, direction):
        """Nothing beyond the leaf change: netem carries the delay itself."""

    def stats(self):
        return {}

    def exited(self):
        """{WAN link index: exit code} of delay lines that are gone (none here)."""
        return {}

    def stop(self):
        pass


class RelayDelay:
    name = "relay"
    uses_relays = True
    description = "userspace delay line (one relay process per WAN link)"

    def __init__(self):
        self.procs = {}      # link index -> Popen
        self.sockets = {}    # link index -> control socket path

    def leaf(self, dev, direction, verb="add", **where):
        return shaping.fifo_leaf(dev, direction.queue, verb, **where)

    def start(self, net, plan, spec, state):
        for w in plan.wan:
            link = spec.wan[w.index]
            node = net[w.relay]
            sock = os.path.join(state.dir, f"relay-{w.index}.sock")
            log = open(os.path.join(state.dir, f"relay-{w.index}.log"), "wb")
            args = self.command() + [
                "--a", w.relay_a, "--b", w.relay_b, "--control", sock,
                "--seed", str(link_seed(spec, w.index)), "--tag", plan.prefix]
            for key, d in (("ab", link.ab), ("ba", link.ba)):
                args += [f"--{key}-delay", repr(d.delay), f"--{key}-jitter", repr(d.jitter),
                         f"--{key}-loss", repr(d.loss)]
            proc = node.popen(args, stdout=subprocess.PIPE, stderr=log)
            log.close()
            self.procs[w.index] = proc
            self.sockets[w.index] = sock
            state.note("pids", proc.pid)
        deadline = time.monotonic() + RELAY_START_TIMEOUT
        for index, proc in self.procs.items():
            self._wait_ready(index, proc, deadline, state)

    def command(self):
        """The delay line's program; the options follow."""
        return [sys.executable, "-m", "testbed.emulation.relay"]

    def _wait_ready(self, index, proc, deadline, state):
        left = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([proc.stdout], [], [], left)
        line = proc.stdout.readline() if ready else b""
        if b'"ready"' not in line:
            try:
                with open(os.path.join(state.dir, f"relay-{index}.log"), errors="replace") as f:
                    tail = f.read().strip().splitlines()[-1:]
            except OSError:
                tail = []
            raise DelayError(f"the delay line of WAN link {index} did not start"
                             + (f": {tail[0]}" if tail else ""))

    def request(self, index, message):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2.0)
        try:
            s.connect(self.sockets[index])
            s.sendall((json.dumps(message) + "\n").encode())
            reply = json.loads(s.makefile("rb").readline() or b"{}")
        except (OSError, ValueError) as e:
            raise DelayError(f"the delay line of WAN link {index} does not answer: {e}") from None
        finally:
            s.close()
        if not reply.get("ok"):
            raise DelayError(f"the delay line of WAN link {index} refused {message}: "
                             f"{reply.get('error')}")
        return reply

    def set(self, wan_plan, key, direction):
        self.request(wan_plan.index, {"op": "set", "dir": key, "delay": direction.delay,
                                      "jitter": direction.jitter, "loss": direction.effective_loss})

    def stats(self):
        return {i: self.request(i, {"op": "stats"}) for i in self.procs}

    def exited(self):
        """{WAN link index: exit code} of the links whose delay line process is gone."""
        return {i: code for i, code in ((i, p.poll()) for i, p in self.procs.items())
                if code is not None}

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()
        self.procs.clear()


class CompiledRelayDelay(RelayDelay):
    name = "crelay"
    description = ("compiled userspace delay line (testbed-delayline, one process per core, "
                   "each serving a share of the WAN links)")

    def __init__(self, tick=None):
        super().__init__()
        self.tick = tick     # its release clock's grid in seconds; None: its default (1 ms)

    def command(self):
        return [delayline_binary()] + ([] if self.tick is None else ["--tick", repr(self.tick)])

    def start(self, net, plan, spec, state):
        # One process per core: a single one saturates its core long before
        # the machine is busy (six DCs of 20 Mbit/s links on two cores).
        groups = [plan.wan[k::max(1, os.cpu_count() or 1)]
                  for k in range(min(len(plan.wan), os.cpu_count() or 1))]
        started = []
        for group in groups:
            args = self.command() + ["--tag", plan.prefix]
            for w in group:
                sock = os.path.join(state.dir, f"relay-{w.index}.sock")
                args += ["--link", link_option(w, spec.wan[w.index], sock,
                                               link_seed(spec, w.index),
                                               f"/proc/{net[w.relay].pid}/ns/net")]
                self.sockets[w.index] = sock
            # It lives in its first link's middle namespace, so `testbed
            # clean` finds it by that namespace as well as by its tag.
            first = group[0].index
            log = open(os.path.join(state.dir, f"relay-{first}.log"), "wb")
            proc = net[group[0].relay].popen(args, stdout=subprocess.PIPE, stderr=log)
            log.close()
            state.note("pids", proc.pid)
            for w in group:
                self.procs[w.index] = proc
            started.append((first, proc))
        deadline = time.monotonic() + RELAY_START_TIMEOUT
        for first, proc in started:
            self._wait_ready(first, proc, deadline, state)

    def stop(self):
        # Several links map to each process: stop each once.
        procs = {id(p): p for p in self.procs.values()}
        self.procs = dict(enumerate(procs.values()))
        super().stop()


class NoDelay(NetemDelay):
    """Routers joined directly, each WAN direction shaped by HTB over the
    byte FIFO the delay lines use, and no delay at all.  Never chosen for a
    run (a requested delay is never ignored): benchmarks build it, through
    network.build's `backend`, to price what a delay line adds."""
    name = "none"
    description = "no delay line (benchmarks only)"

    def leaf(self, dev, direction, verb="add", **where):
        return shaping.fifo_leaf(dev, direction.queue, verb, **where)

    def set(self, wan_plan, key, direction):
        """Nothing beyond the leaf change: there is no delay to carry."""


def link_option(wan_plan, link, sock, seed, netns):
    """One link's `--link` value for testbed-delayline."""
    items = [f"a={wan_plan.relay_a}", f"b={wan_plan.relay_b}", f"control={sock}",
             f"netns={netns}", f"seed={seed}"]
    for key, d in (("ab", link.ab), ("ba", link.ba)):
        items += [f"{key}-delay={d.delay!r}", f"{key}-jitter={d.jitter!r}",
                  f"{key}-loss={d.loss!r}"]
    return ",".join(items)


def make_backend(name):
    return {"netem": NetemDelay, "relay": RelayDelay, "crelay": CompiledRelayDelay}[name]()
