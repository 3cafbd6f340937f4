"""The emulated WAN in Mininet, built from a Spec.

Per data center: one Linux bridge, one router host, the agent hosts.  WAN
links join routers, through a delay-line namespace where the kernel lacks
netem.  Every node, the bridges included, lives in a network namespace of
its own, so nothing of a run is in the host's namespace: bridged frames
never meet the host's firewall rules (bridge-nf-call-* is per namespace)
and the host's settings are never changed.  Each WAN direction is shaped
at its sender's egress (HTB for the rate, the delay backend's leaf for
delay/loss and the queue).  A LAN link is shaped at both ends, the node's
egress and the bridge port toward it, so lan.bw bounds what each node
sends and what it receives.  Routers get
static routes along least-delay paths, so partial meshes work.

`change_link` is the one way anything (dynamics, the consoles, `testbed
inject`, the live page) alters a link while traffic flows: `tc ... change`
and relay messages, never delete-and-re-add, which would reset queues and
flows.
"""

import contextlib
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, replace

from testbed.emulation import capability, shaping, tunnels
from testbed.emulation.delay import DelayError, make_backend
from testbed.emulation.plan import make_plan
from testbed.emulation.shield import signals_deferred
from testbed.emulation.state import RunState, remove_run
from testbed.spec import Direction
from testbed.spec.units import parse_rate

log = logging.getLogger(__name__)
CLASS_RE = re.compile(r"class htb 1:1 .*? rate (\S+) .*?\n\s*Sent (\d+) bytes", re.S)
OFFLOADS = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]
# Per network namespace; a new one starts with the machine's value.
CONGESTION_CONTROL = "/proc/sys/net/ipv4/tcp_congestion_control"
# Whether a connection idle for a retransmission timeout starts again from
# its initial window (RFC 5681, 4.1; the kernel's default is 1).
SLOW_START_AFTER_IDLE = "net.ipv4.tcp_slow_start_after_idle"
REFLECT_TOS = "net.ipv4.tcp_reflect_tos"
TCP_FILES = {"tcp_congestion_control": CONGESTION_CONTROL,
             "tcp_slow_start_after_idle": "/proc/sys/" + SLOW_START_AFTER_IDLE.replace(".", "/")}


class NetworkError(RuntimeError):
    """A step of building or changing the network failed."""


def run_all(node, commands):
    for args in commands:
        run_in(node, args)


def wan_leaves(backend, dev, direction, verb="add"):
    """A WAN egress's leaves: the data's queue (the delay backend's), then
    the heartbeats', delayed and dropped alike with a small queue of its own."""
    liveness = replace(direction, queue=shaping.LIVENESS_QUEUE, queue_bdp=0.0)
    return [backend.leaf(dev, direction, verb, parent=shaping.DATA_CLASS),
            backend.leaf(dev, liveness, verb, parent=shaping.LIVENESS_CLASS, handle=shaping.LIVENESS_LEAF)]


def run_in(node, args, check=True):
    """Run a command in a node's namespace; return its stdout.  A node on
    another machine (testbed.spanning) runs it there."""
    if hasattr(node, "run_in"):
        return node.run_in(args, check)
    r = subprocess.run(["mnexec", "-a", str(node.pid)] + [str(a) for a in args],
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetworkError(f"{node.name}: `{shlex.join(map(str, args))}` failed: "
                           f"{(r.stderr or r.stdout).strip()}")
    return r.stdout


class EmulatedNetwork:
    """A running emulated WAN: nodes by display name and live link changes."""

    def __init__(self, spec, plan, net, backend, state, link_log=None, share=None):
        self.spec = spec
        self.plan = plan
        # The part of the network this machine builds, when one WAN spans
        # several (testbed.emulation.share); None: all of it.
        self.share = share
        self.net = net
        self.backend = backend
        self.state = state
        self.link_log = link_log
        self.started = time.monotonic()
        # (src_dc, dst_dc) -> Direction as currently configured
        self.current = configured_directions(spec)
        self._changing = threading.Lock()
        self._stopped = False

    # ---------------------------------------------------------- lookups

    def node(self, name):
        """The Mininet node of a display name (`virginia-w0`, `virginia-r`)."""
        try:
            return self.net[self.plan.host(name).node]
        except KeyError:
            raise KeyError(f"no host {name!r}; hosts: {', '.join(self.host_names())}") from None

    def ip(self, name):
        return self.plan.host(name).ip

    def host_names(self, role=None):
        return [h.name for h in self.plan.hosts if role is None or h.role == role]

    def tcp_state(self):
        """{setting: {value: [host, ...]}} of the TCP the hosts run, read in
        each host's namespace.  The congestion control is never set: a new
        namespace takes the machine's default (cubic on a stock kernel, bbr
        on some machines), so a run records it; slow start after idle is
        the kernel's default unless the topology sets it (`tcp:`)."""
        found = {name: {} for name in TCP_FILES}
        for h in self.plan.hosts:
            if self.share is not None and not self.share.local(h.dc):
                continue
            values = run_in(self.net[h.node], ["cat", *TCP_FILES.values()]).split()
            for name, value in zip(TCP_FILES, values):
                found[name].setdefault(value, []).append(h.name)
        return found

    def egress(self, src, dst):
        """(router node, interface, WanPlan, key) for the direction src -> dst."""
        w = self.plan.link(src, dst)
        if (w.a, w.b) == (src, dst):
            return self.net[self.plan.router(src).node], w.intf_a, w, "ab"
        return self.net[self.plan.router(src).node], w.intf_b, w, "ba"

    # ---------------------------------------------------------- changes

    def change_link(self, a, b, both=True, rate=None, delay=None, jitter=None, loss=None,
                    up=None, source="api"):
        """Change a WAN link in place: direction a->b, and b->a too if `both`.
        Values in bit/s, seconds, fraction; up=False cuts the link (every
        frame dropped, queues and routes kept), up=True restores it.  None
        leaves a value as it is.  Returns the new {(src, dst): Direction}.

        One change at a time, whoever asks (dynamics, consoles, the page),
        so the record, links.jsonl and the kernel move together.  Values
        outside topo.yaml's bounds are refused before anything is touched
        (NetworkError); a step that fails undoes the steps before it, so
        the link stays as it was, and if an undo fails too, the record
        takes what the kernel then holds."""
        self.plan.link(a, b)  # raises KeyError for a pair without a link
        with self._changing:
            new = changed_directions(self.current, a, b, both, rate, delay, jitter, loss, up)
            steps = [step for pair, direction in new.items()
                     for step in self._steps(pair, self.current[pair], direction)]
            try:
                apply_all(steps)
            except ChangeFailed as e:
                for pair, held in e.kept.items():
                    self.current[pair] = held
                    self._log_change(pair, held, source, complete=False)
                raise
            for pair, direction in new.items():
                self.current[pair] = direction
                self._log_change(pair, direction, source)
            return new

    def _steps(self, pair, old, new):
        """The steps that take one direction from `old` to `new`, each with
        its undo: the HTB class, the leaf queue, the delay line."""
        w = self.plan.link(*pair)
        steps = []
        if self.share is not None and not self.share.shapes(w, pair[0]):
            return self._delay_steps(pair, old, new, w)
        node, dev, w, key = self.egress(*pair)
        if new.rate != old.rate:
            steps.append(Step(pair, old, new, {"rate"},
                              lambda: run_all(node, shaping.wan_change(dev, new.rate)),
                              lambda: run_all(node, shaping.wan_change(dev, old.rate))))
        if new != old:
            # netem carries the delay, jitter and loss in the leaves; a FIFO only the queue.
            netem = self.backend.name == "netem"
            fields = {"queue"} | ({"delay", "jitter", "loss", "up"} if netem else set())
            leaves = lambda d: wan_leaves(self.backend, dev, d, "change")[:2 if netem else 1]  # noqa: E731
            steps.append(Step(pair, old, new, fields,
                              lambda: run_all(node, leaves(new)), lambda: run_all(node, leaves(old))))
        return steps + self._delay_steps(pair, old, new, w)

    def _delay_steps(self, pair, old, new, w):
        """The delay line's step, where this machine runs the link's delay line."""
        if self.share is not None and not self.share.delays(w):
            return []
        if (new.delay, new.jitter, new.effective_loss) == (old.delay, old.jitter, old.effective_loss):
            return []
        key = "ab" if pair == (w.a, w.b) else "ba"
        return [Step(pair, old, new, {"delay", "jitter", "loss", "up"},
                     lambda: self.backend.set(w, key, new),
                     lambda: self.backend.set(w, key, old), unsure=True)]

    def _log_change(self, pair, d, source, complete=True):
        log_change(self.link_log, self.started, pair, d, source, complete)

    def shaper_counters(self, src, dst):
        """(rate in bit/s, bytes sent) of the src->dst shaper, as the kernel
        reports them (`tc -s class show`)."""
        node, dev, _, _ = self.egress(src, dst)
        m = CLASS_RE.search(run_in(node, ["tc", "-s", "class", "show", "dev", dev]))
        if not m:
            raise NetworkError(f"no HTB class on {dev}")
        return parse_rate(m.group(1)), int(m.group(2))

    def shaped_rate(self, src, dst):
        return self.shaper_counters(src, dst)[0]

    def failure(self):
        """Why the emulation no longer works, in one sentence, or None: a
        delay line or a node's shell is gone (their links forward nothing
        while every agent lives on)."""
        if self._stopped or self.net is None:
            return None
        gone = self.backend.exited()
        if gone:
            index, code = min(gone.items())
            return f"the delay line of WAN link {index} ({self.spec.wan[index].name}) " \
                   f"{describe_exit(code)}"
        for node in self.net.hosts + self.net.switches:
            if node.shell is None or node.shell.poll() is not None:
                return f"the shell of the emulated node {node.name} is gone"
        return None

    # ---------------------------------------------------------- teardown

    def stop(self):
        """Tear everything down; safe to call twice, and after a failed build."""
        if self._stopped:
            return
        self._stopped = True
        with signals_deferred():
            self._teardown()

    def _teardown(self):
        try:
            self.backend.stop()
        finally:
            try:
                if self.net is not None and all_shells_alive(self.net):
                    self.net.stop()
                elif self.net is not None:
                    # Mininet would wait forever for a dead shell's prompt.
                    log.warning("a node's shell died; removing the run's objects by name")
            except Exception:  # noqa: BLE001 - the sweep below finishes the job
                log.exception("mininet stop failed; removing the run's objects by name")
            finally:
                remove_run(self.state.run_id, self.state.data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def configured_directions(spec):
    """{(src_dc, dst_dc): Direction} of every WAN direction as topo.yaml sets it."""
    current = {}
    for link in spec.wan:
        current[(link.a, link.b)] = link.ab
        current[(link.b, link.a)] = link.ba
    return current


def changed_directions(current, a, b, both, rate, delay, jitter, loss, up):
    """{(src, dst): the new Direction} of a change to link a-b (b->a too if
    `both`) from the directions in `current`; NetworkError, before anything
    is touched, for a value outside topo.yaml's bounds."""
    new = {}
    for pair in [(a, b), (b, a)] if both else [(a, b)]:
        try:
            new[pair] = current[pair].changed(rate, delay, jitter, loss, up)
        except ValueError as e:
            raise NetworkError(f"{a}-{b}: {e}") from None
    return new


def log_change(path, started, pair, d, source, complete=True):
    """One line of links.jsonl (nothing without a path): a direction as a
    change left it, `t` counted from `started` (monotonic)."""
    if not path:
        return
    event = {"t": round(time.monotonic() - started, 6), "wall": time.time(),
             "src": pair[0], "dst": pair[1], "rate": d.rate, "delay": d.delay,
             "jitter": d.jitter, "loss": d.loss, "up": d.up, "queue": d.queue, "source": source}
    if not complete:
        event["incomplete"] = True      # a failed change the kernel kept part of
    with open(path, "a") as f:
        f.write(json.dumps(event) + "\n")


def describe_exit(code):
    """'was killed by SIGKILL', 'exited with code 1'."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


@dataclass
class Step:
    """One step of a link change, taking direction `pair` from `old` to
    `new` in the settings `fields`: do() applies it, undo() restores them."""
    pair: tuple
    old: object
    new: object
    fields: set
    do: object
    undo: object
    # A failed do() may still take effect: a delay line that did not answer
    # in time may read the request later.  Its undo is then sent as well,
    # to be read after it.
    unsure: bool = False


class ChangeFailed(NetworkError):
    """A link change failed part-way; `kept` says what the kernel holds."""


def apply_all(steps):
    """Do every step, or none: a failure undoes the steps done before it, in
    reverse, and raises.  If an undo fails as well, the error is raised
    with `.kept`: {pair: the Direction the link now has}, the new values
    of the steps that stayed done, the old ones of the rest."""
    done = []
    for step in steps:
        try:
            step.do()
        except (NetworkError, DelayError) as e:
            if step.unsure:
                with contextlib.suppress(NetworkError, DelayError):
                    step.undo()
            stuck = []
            for earlier in reversed(done):
                try:
                    earlier.undo()
                except (NetworkError, DelayError):
                    stuck.append(earlier)
            if not stuck:
                raise
            kept = {}
            for s in reversed(stuck):
                base = kept.get(s.pair, s.old)
                kept[s.pair] = replace(base, **{f: getattr(s.new, f) for f in s.fields})
            error = ChangeFailed(f"{e}; undoing the steps before it failed too, so the link "
                                 "keeps part of the change")
            error.kept = kept
            raise error from None
        done.append(step)


def all_shells_alive(net):
    return all(n.shell is not None and n.shell.poll() is None for n in net.hosts + net.switches)


def check_buildable(spec, delay_backend="auto"):
    """The delay backend the Spec's network would use; raises CapabilityError
    (one sentence) when this machine cannot build it.  Touches nothing."""
    capability.require_network_capabilities()
    backend_name = capability.choose_delay_backend(delay_backend)
    if spec.lan.delay > 0 and backend_name != "netem":
        raise capability.CapabilityError(
            "lan.delay needs the kernel's sch_netem, which this machine lacks; the delay "
            "line emulates WAN links only: remove lan.delay or load sch_netem")
    return backend_name


def build(spec, delay_backend="auto", link_log=None, run_dir=None, backend=None, share=None):
    """Bring the Spec's network up; returns an EmulatedNetwork.  On any
    failure everything created so far is removed before the error rises.
    run_dir, the run folder if there is one, is recorded for `testbed clean`.
    backend, a delay backend object, is used instead of the one chosen by
    name (benchmarks set a delay line's parameters, or leave it out).
    share, a testbed.emulation.share.Share, builds only this machine's part
    of a WAN that spans machines, its crossing links as VXLAN tunnels."""
    if backend is None:
        backend = make_backend(check_buildable(spec, delay_backend))
    else:
        capability.require_network_capabilities()
    backend_name = backend.name
    from mininet.log import setLogLevel
    setLogLevel("error")

    state = RunState.create()
    management = spec.experiment is not None and spec.experiment.coordination == "management"
    plan = make_plan(spec, state.run_id, with_relays=backend.uses_relays, management=management)
    state.set(spec=spec.source, name=spec.name, delay_backend=backend_name,
              run_dir=os.path.abspath(run_dir) if run_dir else None,
              bridges=[sw for _, sw in plan.switches], links=interface_names(plan))
    emulated = EmulatedNetwork(spec, plan, None, backend, state, link_log, share)
    try:
        emulated.net = _create(plan, state, share)
        if share is not None:
            tunnels.open_all(emulated.net, plan, share)
        _configure(emulated)
        backend.start(emulated.net, local_relays(plan, share), spec, state)
    except BaseException:
        emulated.stop()
        raise
    return emulated


def _create(plan, state, share=None):
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host
    from mininet.nodelib import LinuxBridge

    here = (lambda dc: True) if share is None else share.local
    net = Mininet(switch=LinuxBridge, controller=None, build=False, autoSetMacs=False,
                  autoStaticArp=False)
    # A switch in a namespace of its own: each veth is created in its two
    # nodes' namespaces directly (never in the host's).
    # Each switch gets its datapath ID: Mininet derives one from the first
    # number in a name, and a run ID of letters only leaves the management
    # switch's name without one.
    switches = {dc: net.addSwitch(sw, cls=LinuxBridge, inNamespace=True, dpid=f"{k + 1:x}")
                for k, (dc, sw) in enumerate(plan.switches) if here(dc)}
    if plan.management:
        switches[None] = net.addSwitch(plan.management.switch, cls=LinuxBridge, inNamespace=True,
                                       dpid=f"{len(plan.switches) + 1:x}")
    hosts = {h.node: net.addHost(h.node, cls=Host, ip=None) for h in plan.hosts if here(h.dc)}
    for w in plan.wan:
        if w.relay and here(w.a):
            hosts[w.relay] = net.addHost(w.relay, cls=Host, ip=None)
    # Record the namespaces the moment they exist: a runner killed from here
    # on leaves processes that `testbed clean` finds by namespace.
    nodes = list(switches.values()) + list(hosts.values())
    state.note("pids", *[n.pid for n in nodes])
    state.pin({n.name: n.pid for n in nodes})
    for h in plan.hosts:
        if here(h.dc):
            net.addLink(hosts[h.node], switches[h.dc], cls=Link, intfName1=h.intf,
                        intfName2=h.switch_port)
    for p in plan.management.ports if plan.management else ():
        net.addLink(hosts[p.router], switches[None], cls=Link, intfName1=p.intf,
                    intfName2=p.switch_port)
    for w in plan.wan:
        ra, rb = hosts.get(plan.router(w.a).node), hosts.get(plan.router(w.b).node)
        # A link whose far end is on another machine gets its tunnel later.
        if w.relay and ra:
            net.addLink(ra, hosts[w.relay], cls=Link, intfName1=w.intf_a, intfName2=w.relay_a)
            if rb:
                net.addLink(hosts[w.relay], rb, cls=Link, intfName1=w.relay_b, intfName2=w.intf_b)
        elif ra and rb:
            net.addLink(ra, rb, cls=Link, intfName1=w.intf_a, intfName2=w.intf_b)
    net.build()
    net.start()
    return net


def local_relays(plan, share):
    """The plan as the delay backend sees it: the links whose delay line runs here."""
    if share is None:
        return plan
    return replace(plan, wan=tuple(w for w in plan.wan if share.delays(w)))


def interface_names(plan):
    """Every interface a run creates, bridges included."""
    names = [sw for _, sw in plan.switches]
    for h in plan.hosts:
        names += [h.intf, h.switch_port]
    for w in plan.wan:
        names += [n for n in (w.intf_a, w.intf_b, w.relay_a, w.relay_b) if n]
    if plan.management:
        names.append(plan.management.switch)
        for p in plan.management.ports:
            names += [p.intf, p.switch_port]
    return names


def tcp_settings(spec):
    """sysctl assignments for the hosts' TCP settings the topology sets
    (`tcp:`), each in the host's own namespace: the machine's are left as
    found."""
    restart = spec.tcp.slow_start_after_idle
    return [] if restart is None else [f"{SLOW_START_AFTER_IDLE}={int(restart)}"]


def reflect_tos():
    """The sysctl that has every host answer a connection in the TOS its
    first segment came with, so a heartbeat's acknowledgements share its
    class on the way back (shaping.py; agents' data is unmarked either
    way); none on a kernel without it (before 5.10)."""
    return [f"{REFLECT_TOS}=1"] if os.path.exists("/proc/sys/" + REFLECT_TOS.replace(".", "/")) else []


def _configure(emulated):
    net, plan, spec, backend = emulated.net, emulated.plan, emulated.spec, emulated.backend
    if capability.bridge_nf_settings():
        # A new namespace starts with bridge-nf-call-* on (the kernel's
        # default).  No rules exist in a switch's namespace, so nothing would
        # filter; off spares every frame the trip through netfilter.
        for switch in net.switches:
            run_in(switch, ["sysctl", "-q", "-w"] +
                   [f"net.bridge.bridge-nf-call-{t}=0" for t in capability.BRIDGE_NF])
    tcp = tcp_settings(spec) + reflect_tos()
    for host in net.hosts + net.switches:
        run_in(host, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                      "net.ipv6.conf.default.disable_ipv6=1"] + (tcp if host in net.hosts else []))
        for intf in host.intfList():
            if intf.name != "lo":
                # Frames must stay MTU-sized and carry real checksums: the
                # shaper counts what crosses a real wire, and the relay copies
                # frames as they are.
                run_in(host, ["ethtool", "-K", intf.name] + OFFLOADS, check=False)
    here = (lambda dc: True) if emulated.share is None else emulated.share.local
    lan_leaf = Direction(rate=spec.lan.rate, delay=spec.lan.delay,
                         queue=max(64 * shaping.FRAME_BYTES, int(spec.lan.rate / 8 * 0.002)))
    switch_of = dict(plan.switches)
    for h in plan.hosts:
        if not here(h.dc):
            continue
        node = net[h.node]
        run_in(node, ["ip", "addr", "add", f"{h.ip}/24", "dev", h.intf])
        run_in(node, ["ip", "link", "set", h.intf, "up"])
        for cmd in shaping.htb_setup(h.intf, spec.lan.rate) + [_lan_leaf(backend, h.intf, lan_leaf)]:
            run_in(node, cmd)
        _shape_switch_port(net[switch_of[h.dc]], h.switch_port, lan_leaf)
        if h.role == "router":
            run_in(node, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        else:
            run_in(node, ["ip", "route", "add", "default", "via", plan.router(h.dc).ip])
    for w in plan.wan:
        link = spec.wan[w.index]
        for router_dc, dev, ip, direction in ((w.a, w.intf_a, w.ip_a, link.ab),
                                              (w.b, w.intf_b, w.ip_b, link.ba)):
            if not here(router_dc):
                continue
            node = net[plan.router(router_dc).node]
            run_in(node, ["ip", "addr", "add", f"{ip}/24", "dev", dev])
            run_in(node, ["ip", "link", "set", dev, "up"])
            for cmd in shaping.wan_setup(dev, direction.rate) + wan_leaves(backend, dev, direction):
                run_in(node, cmd)
        if w.relay and here(w.a):
            relay = net[w.relay]
            for dev in (w.relay_a, w.relay_b):
                run_in(relay, ["ip", "link", "set", dev, "up"])
    lan_ip = {h.node: h.ip for h in plan.hosts if h.role == "router"}
    for r in plan.routes:
        if r.node not in lan_ip or not here(plan.host(r.node).dc):
            continue
        # What a router sends itself (probes, the coordinator) leaves from its
        # LAN address, which every other router has a route to; the WAN
        # link's own address is known only to its two ends.
        run_in(net[r.node], ["ip", "route", "add", r.dest, "via", r.via, "dev", r.dev,
                             "src", lan_ip[r.node]])
    if plan.management:
        _configure_management(net, plan)
    _wait_for_bridges(net)


BRIDGE_READY_TIMEOUT = 10.0


def _wait_for_bridges(net):
    """Until every bridge port forwards.  A port whose far end came up only
    now is still disabled for a moment; a frame sent then is lost, and the
    first ARP request of a run would be retried a second later."""
    deadline = time.monotonic() + BRIDGE_READY_TIMEOUT
    for switch in net.switches:
        while True:
            ports = run_in(switch, ["bridge", "link", "show"], check=False).splitlines()
            waiting = [p.split(":")[1].strip() for p in ports if "state forwarding" not in p]
            if not waiting:
                break
            if time.monotonic() > deadline:
                raise NetworkError(f"bridge ports {', '.join(waiting)} of {switch.name} do not "
                                   f"forward after {BRIDGE_READY_TIMEOUT:g}s")
            time.sleep(0.02)


MANAGEMENT_TABLE = "100"


def _configure_management(net, plan):
    """Each router's management address; what a router sends from that
    address goes over the management network to the other DCs (a routing
    table of its own), everything else keeps the WAN routes.  Replies reach
    a management address over the management network: every router has it
    as a directly connected subnet."""
    subnets = {h.dc: h.ip.rsplit(".", 1)[0] for h in plan.hosts if h.role == "router"}
    for p in plan.management.ports:
        node = net[p.router]
        run_in(node, ["ip", "addr", "add", f"{p.ip}/24", "dev", p.intf])
        run_in(node, ["ip", "link", "set", p.intf, "up"])
        for other in plan.management.ports:
            if other.dc != p.dc:
                run_in(node, ["ip", "route", "add", f"{subnets[other.dc]}.0/24", "via", other.ip,
                              "dev", p.intf, "table", MANAGEMENT_TABLE])
        run_in(node, ["ip", "rule", "add", "from", p.ip, "lookup", MANAGEMENT_TABLE])


def _shape_switch_port(switch, port, lan_leaf):
    """The bridge port toward a node sends what the node's NIC receives:
    shaped at lan.bw with the same queue as the node's own egress, so a
    node takes in no more than lan.bw however many senders it has (the big-
    switch model).  The LAN delay stays at the sender's egress only, so
    each direction has it once.  Routers' ports too: a router's LAN NIC
    already caps what enters the DC from the WAN at lan.bw, and this caps
    what leaves it the same way, as for any other node."""
    for cmd in shaping.htb_setup(port, lan_leaf.rate) + [shaping.fifo_leaf(port, lan_leaf.queue)]:
        run_in(switch, cmd)


def _lan_leaf(backend, dev, direction):
    if direction.delay > 0:
        return shaping.netem_leaf(dev, direction)
    return shaping.fifo_leaf(dev, direction.queue)


__all__ = ["EmulatedNetwork", "NetworkError", "DelayError", "build", "run_in"]
