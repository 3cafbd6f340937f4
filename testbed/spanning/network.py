"""The driver's view of a WAN that spans machines: the same interface as a
one-machine EmulatedNetwork (plan, current, change_link, shaper_counters,
failure, stop, node(...)), each call sent to the machine that holds what
it touches.

Each machine builds its share with its own run id, so its node and
interface names are its own; the plan here takes every DC's hosts and
every link end from the machine that owns it, so agent configs name what
exists where they run.  Addresses follow from positions in the topology,
never from run ids, so they agree everywhere.

Clocks: each machine's CLOCK_MONOTONIC is read against the driver's with
the exchange of least round trip (the offset is within half of it);
whatever crosses machines as a time (the probes' epoch, the agents'
event times) is moved by that offset.
"""

import base64
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import secrets
import subprocess
import threading
import time
from types import SimpleNamespace

from testbed.emulation.network import (
    NetworkError,
    changed_directions,
    configured_directions,
    log_change,
)
from testbed.emulation.plan import make_plan
from testbed.spanning.client import RPC_TIMEOUT, MachineLost
from testbed.spanning.records import shift_times, unpack

log = logging.getLogger(__name__)
BUILD_TIMEOUT = 300.0
POLL_EVERY = 0.2            # seconds a process list read from a machine stays fresh
LOST = -9                   # the exit code of a process whose machine was lost


class RemoteProcess:
    """A process in an emulated host on some machine, as much of Popen as
    the runner and the measurements use."""

    def __init__(self, network, machine, name, pid):
        self.network, self.machine, self.name, self.pid = network, machine, name, pid
        self.returncode = None
        self.stdout = self.stderr = SimpleNamespace(close=lambda: None)

    def poll(self):
        if self.returncode is None:
            self.returncode = self.network.poll(self.machine, self.name)
        return self.returncode

    def send_signal(self, sig):
        if self.poll() is None:
            with contextlib.suppress(MachineLost):
                self.machine.call("signal", name=self.name, sig=int(sig))

    def terminate(self):
        self.send_signal(15)

    def kill(self):
        self.send_signal(9)

    def wait(self, timeout=None):
        longest = (timeout if timeout is not None else 24 * 3600) + RPC_TIMEOUT
        try:
            code = self.machine.call("wait", timeout=longest, name=self.name, limit=timeout)
        except MachineLost:
            code = LOST
        if code is None:
            raise subprocess.TimeoutExpired(self.name, timeout)
        self.returncode = code
        return code

    def communicate(self, timeout=None):
        self.wait(timeout)
        out, err = self.machine.call("output", name=self.name)
        return base64.b64decode(out), base64.b64decode(err)


class RemoteNode:
    """An emulated host on some machine: commands in it, processes in it."""

    def __init__(self, network, machine, display, node):
        self.network, self.machine, self.display, self.name = network, machine, display, node

    def run_in(self, args, check=True):
        return self.machine.call("run", host=self.display, args=[str(a) for a in args], check=check)

    def popen(self, args, **_ignored):
        return self.network.start(self.display, [str(a) for a in args])


class SpanningNetwork:
    """A WAN whose DCs are built by several machines (testbed.emulation.share)."""

    def __init__(self, spec, machines, shares, link_log=None, text=None, overrides=()):
        """text: the topology's text, if not spec.source's file; overrides:
        the --set PATH=VALUE texts the spec was read with."""
        self.spec = spec
        if text is None:
            with open(spec.source) as f:
                text = f.read()
        self.text, self.overrides = text, list(overrides)
        self.machines = machines           # {name: Machine}
        self.shares = shares               # {name: Share}
        self.machine_of = {dc: m for m, s in shares.items() for dc in s.dcs}
        self.link_log = link_log
        self.started = time.monotonic()
        self.current = configured_directions(spec)
        self.plan = None
        self.backend = None
        self.state = None
        self.offsets = {}
        self.underlay = {}                 # "m1-m2": the underlay's round trip between them
        self._changing = threading.Lock()
        self._counter = 0
        self._polled = {}                  # machine -> (time, {name: code})
        self._built = []
        self._stopped = False
        self.run_dir = None
        self.shared = {}                   # machine -> whether it sees the run folder

    # ------------------------------------------------------------ building

    def build(self, delay_backend, run_dir):
        """Each machine builds its share, all at once; any failure tears
        every machine's part down before the error rises."""
        for name, m in self.machines.items():
            self.offsets[name] = m.offset()
        self._lag_tunnels()
        results, errors = {}, []

        def one(name):
            try:
                results[name] = self.machines[name].call(
                    "build", timeout=BUILD_TIMEOUT, text=self.text, overrides=self.overrides,
                    source=self.spec.source, name=self.spec.name, digest=spec_digest(self.spec),
                    share=self.shares[name].to_dict(), delay_backend=delay_backend, run_dir=run_dir)
            except Exception as e:  # noqa: BLE001 - every machine's failure is reported
                errors.append(str(e) or type(e).__name__)

        threads = [threading.Thread(target=one, args=(n,)) for n in self.machines]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self._built = list(results)
        self.run_dir = run_dir
        if run_dir and not errors:
            self._find_shared(run_dir)
        if errors:
            self.stop()
            raise NetworkError(errors[0])
        first = next(iter(results.values()))
        self.backend = SimpleNamespace(name=first["backend"], description=first["description"],
                                       uses_relays=first["uses_relays"], request=self._relay_request)
        self.state = SimpleNamespace(run_id="+".join(results[m]["run_id"] for m in self.machines))
        plans = {m: make_plan(self.spec, r["run_id"], with_relays=r["uses_relays"])
                 for m, r in results.items()}
        self.plan = merged_plan(plans, self.machine_of, self.state.run_id)
        return self

    def _lag_tunnels(self):
        """Each pair of machines a link crosses between: the underlay's mean
        round trip, read from one of them; half of it is each tunnel's lag
        (share.lagged), the same at both ends."""
        rtt = {}
        for m, part in sorted(self.shares.items()):
            lagged = []
            for t in part.tunnels:
                pair = tuple(sorted((m, self._peer(m, t.link))))
                if pair not in rtt:
                    rtt[pair] = self.machines[pair[0]].call(
                        "underlay_rtt", address=self.machines[pair[1]].address)
                lagged.append(dataclasses.replace(t, lag=rtt[pair] / 2))
            self.shares[m] = dataclasses.replace(part, tunnels=tuple(lagged))
        self.underlay = {"-".join(pair): value for pair, value in rtt.items()}

    def _peer(self, machine, link):
        """The other machine link `link` crosses to from `machine`."""
        return next(m for m, part in self.shares.items()
                    if m != machine and part.tunnel(link) is not None)

    def _find_shared(self, run_dir):
        """Which machines see the driver's run folder (a shared filesystem, or
        the driver's own machine): the others get the agents' files sent
        and send back what the agents wrote."""
        marker = os.path.join(run_dir, f".driver-{secrets.token_hex(4)}")
        open(marker, "w").close()
        try:
            self.shared = {m: self.machines[m].call("exists", path=marker) for m in self._built}
        finally:
            os.unlink(marker)

    # ------------------------------------------------------------ lookups

    def machine(self, dc):
        return self.machines[self.machine_of[dc]]

    def node(self, name):
        h = self.plan.host(name)
        return RemoteNode(self, self.machine(h.dc), h.name, h.node)

    def ip(self, name):
        return self.plan.host(name).ip

    def host_names(self, role=None):
        return [h.name for h in self.plan.hosts if role is None or h.role == role]

    # ------------------------------------------------------------ processes

    def start(self, host, args, env=None, log=None, python=False, files=()):
        """A RemoteProcess running args in host (python: after the machine's
        interpreter), its output to the file log or kept; `files` (paths
        in the run folder) are sent first to a machine that does not see it."""
        self._counter += 1
        name = f"p{self._counter}-{host}"
        machine = self.machine(self.plan.host(host).dc)
        if files and not self.shared.get(machine.name, True):
            blobs = {}
            for path in files:
                with open(path, "rb") as f:
                    blobs[path] = base64.b64encode(f.read()).decode()
            machine.call("put", files=blobs)
        pid = machine.call("start", name=name, host=host, args=list(args), env=env or {},
                           log=log, python=python)
        return RemoteProcess(self, machine, name, pid)

    def poll(self, machine, name):
        """A process's exit code, from one read of all of that machine's
        processes at most every POLL_EVERY seconds; a lost machine's
        processes count as killed."""
        at, codes = self._polled.get(machine.name, (0.0, {}))
        if time.monotonic() - at > POLL_EVERY or name not in codes:
            try:
                codes = machine.call("poll")
            except MachineLost:
                return LOST
            self._polled[machine.name] = (time.monotonic(), codes)
        return codes.get(name)

    # ------------------------------------------------------------ links

    def change_link(self, a, b, both=True, rate=None, delay=None, jitter=None, loss=None,
                    up=None, source="api"):
        """As EmulatedNetwork.change_link: refused whole before anything is
        touched, then applied by each machine that shapes a direction of
        the link or runs its delay line."""
        w = self.plan.link(a, b)
        with self._changing:
            new = changed_directions(self.current, a, b, both, rate, delay, jitter, loss, up)
            owners = dict.fromkeys([self.machine_of[w.a]] + [self.machine_of[p[0]] for p in new])
            changes = {"rate": rate, "delay": delay, "jitter": jitter, "loss": loss, "up": up}
            for m in owners:
                self.machines[m].call("change", a=a, b=b, both=both, changes=changes, source=source)
            for pair, direction in new.items():
                self.current[pair] = direction
                log_change(self.link_log, self.started, pair, direction, source)
            return new

    def shaper_counters(self, src, dst):
        rate, sent = self.machine(src).call("counters", pairs=[[src, dst]])[0]
        return rate, sent

    def _relay_request(self, index, message):
        w = self.plan.wan[index]
        return self.machine(w.a).call("relay_stats", index=index)

    def cpu_laps(self):
        """{machine: its cores' busy share since the last call} (None the first time)."""
        return {m: self.machines[m].call("cpu_lap") for m in self._built}

    def tcp_state(self):
        merged = {}
        for m in self._built:
            for setting, values in self.machines[m].call("tcp_state").items():
                for value, hosts in values.items():
                    merged.setdefault(setting, {}).setdefault(value, []).extend(hosts)
        return merged

    def failure(self):
        """Why the spanning network no longer works, naming the machine, or None."""
        if self._stopped:
            return None
        for m in self._built:
            try:
                why = self.machines[m].call("failure", timeout=10.0)
            except NetworkError as e:
                return str(e)
            if why:
                return f"on machine {m}: {why}"
        return None

    # ------------------------------------------------------------ teardown

    def offset_of(self, host):
        """The clock offset of the machine that runs host (its time minus the driver's)."""
        return self.offsets[self.machine(self.plan.host(host).dc).name][0]

    def gather(self):
        """Into the driver's run folder: what the agents on machines that do
        not see it wrote; then every agent event's time on the driver's
        clock, and clocks.json with the offsets it was moved by."""
        if not self.run_dir:
            return
        for m in self._built:
            if not self.shared.get(m, True):
                data = self.machines[m].call("collect", timeout=120.0, root=self.run_dir)
                unpack(base64.b64decode(data), self.run_dir)
        hosts = {}
        for h in self.plan.hosts:
            hosts[h.name] = self.machine_of[h.dc]
        agents = os.path.join(self.run_dir, "agents")
        for name in sorted(os.listdir(agents)) if os.path.isdir(agents) else ():
            base, ext = os.path.splitext(name)
            owner = hosts.get(base) or hosts.get(f"{base.rsplit('-', 1)[0]}-r")
            offset, within = self.offsets[owner] if owner else (0.0, 0.0)
            # An offset inside its own uncertainty (one kernel's clock) is no correction.
            if ext == ".jsonl" and abs(offset) > within:
                shift_times(os.path.join(agents, name), -offset)
        with open(os.path.join(self.run_dir, "clocks.json"), "w") as f:
            json.dump({"machines": {m: {"offset": o, "within": u, "machine_of": sorted(
                dc for dc, owner in self.machine_of.items() if owner == m)}
                for m, (o, u) in self.offsets.items()}, "underlay_rtt": self.underlay}, f, indent=1)

    def stop(self):
        """Every machine tears its part down; a machine that does not answer
        is named in the log and left to its own silence timeout."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self.gather()
        except (NetworkError, OSError) as e:
            log.warning("the agents' files of a machine were not gathered: %s", e)
        for m in self._built:
            try:
                self.machines[m].call("stop", timeout=60.0)
            except NetworkError as e:
                # Its node server takes its part down when the driver goes silent.
                log.warning("%s; its part is left to its own teardown", e)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def merged_plan(plans, machine_of, run_id):
    """One NetworkPlan whose every host, switch, link end and route is the
    owning machine's: DC d's from machine_of[d]'s plan, link j's a side
    (and its delay line) from a's machine, its b side from b's."""
    any_plan = next(iter(plans.values()))

    def owner(dc):
        return plans[machine_of[dc]]

    hosts = tuple(owner(h.dc).hosts[i] for i, h in enumerate(any_plan.hosts))
    switches = tuple(owner(dc).switches[i] for i, (dc, _) in enumerate(any_plan.switches))
    wan = []
    for j, w in enumerate(any_plan.wan):
        wa, wb = owner(w.a).wan[j], owner(w.b).wan[j]
        wan.append(dataclasses.replace(wa, intf_b=wb.intf_b))
    node_dc = {h.node: h.dc for p in plans.values() for h in p.hosts if h.role == "router"}
    routes = []
    for i, r in enumerate(any_plan.routes):
        dc = node_dc[r.node]
        routes.append(owner(dc).routes[i])
    return dataclasses.replace(any_plan, run_id=run_id, switches=switches, hosts=hosts, wan=tuple(wan),
                   routes=tuple(routes))


def spec_digest(spec):
    """A digest of a Spec as resolved, where it was read from left out:
    equal on two machines when both read the topology alike."""
    resolved = dataclasses.asdict(dataclasses.replace(spec, source=""))
    return hashlib.sha256(json.dumps(resolved, sort_keys=True, default=str).encode()).hexdigest()
