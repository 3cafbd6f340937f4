#!/usr/bin/env python3
"""Spreads one emulated WAN over several VMs: `testbed selftest --cluster`.

    vm/cluster.py                          2 VMs, the default 2-DC selftest
    vm/cluster.py --machines 3 -- FILE --place a=192.0.2.1 --place b=192.0.2.3

Boots N VMs from the cached image (vm/run.py's, snapshot mode), each with one
NIC, on a private bridge (MTU 1550, VM k at 192.0.2.k/24).  The bridge
and the VMs' taps live in a network namespace of their own, where QEMU runs
too, so the host's own namespace is never touched.  Every VM joins a Ray
cluster with the `testbed` resource, VM 1 being the head; VM 1 then runs
`testbed selftest --cluster 192.0.2.1:6379 --delay-backend netem` with
`--place east=192.0.2.1 --place west=192.0.2.2`, or with what follows `--`
(which replaces those two if it has a --place of its own).  Its output comes
here and its exit code is this one's.  Everything is removed at the end, on
Ctrl-C or failure too.  Only the Python standard library, as vm/run.py.
"""

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import run as vm  # vm/run.py, beside this file

SUBNET = "192.0.2"            # TEST-NET-1: never a real network
MTU = "1550"                  # 1500 bytes of emulated frame and 50 of VXLAN
GCS_PORT = 6379
GRACE = 120.0                 # seconds for the other VMs to leave Ray and power off
print_lock = threading.Lock()


def say(text):
    with print_lock:
        print(f"vm-cluster: {text}", flush=True)


def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


class Vm:
    """One VM: its address on the bridge, its tap, its exchange directory
    (the guest's /run/geo) and its QEMU process."""

    def __init__(self, index):
        self.index = index
        self.name = f"vm{index}"
        self.address = f"{SUBNET}.{index}"
        self.mac = f"52:54:00:c0:00:{index:02x}"
        self.tap = f"tap{index}"
        self.exchange = tempfile.mkdtemp(prefix=f"geo-vm-cluster-{self.name}-")
        self.proc = None
        self.reader = None
        self.started = False        # the guest's init began the command
        self.boot_lines = []

    def has(self, name):
        return os.path.exists(os.path.join(self.exchange, name))

    def tell(self, name):
        open(os.path.join(self.exchange, name), "w").close()

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def exit_code(self):
        try:
            with open(os.path.join(self.exchange, "exit-code")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None


def netns_up(netns, vms):
    """The namespace with a bridge and one tap per VM, all at MTU 1550."""
    ip("netns", "add", netns)
    ip("-n", netns, "link", "set", "lo", "up")
    ip("-n", netns, "link", "add", "br0", "type", "bridge")
    ip("-n", netns, "link", "set", "br0", "mtu", MTU, "up")
    # Bridged frames stay out of netfilter (where br_netfilter is loaded).
    ip("netns", "exec", netns, "sysctl", "-qw",
       *[f"net.bridge.bridge-nf-call-{t}=0" for t in ("iptables", "ip6tables", "arptables")],
       check=False)
    for v in vms:
        ip("-n", netns, "tuntap", "add", "dev", v.tap, "mode", "tap")
        ip("-n", netns, "link", "set", v.tap, "mtu", MTU, "master", "br0", "up")


def netns_down(netns):
    """Whatever still runs in the namespace (only our QEMUs), then the
    namespace with its bridge and taps."""
    for _ in range(50):
        pids = [int(p) for p in ip("netns", "pids", netns, check=False).stdout.split()]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    ip("netns", "del", netns, check=False)


def boot(v, netns, image, accel, cpus, memory, script_args):
    """Start v's QEMU in the namespace, running vm/cluster-node.sh, and a
    thread that prints its output (the head's as it is, the others' marked)."""
    command = "bash vm/cluster-node.sh " + shlex.join(script_args)
    with open(os.path.join(v.exchange, "command"), "w") as f:
        f.write(vm.command_script(command))
    args = vm.qemu_args(image, accel, cpus, memory,
                        f"{vm.KERNEL_ARGS} quiet init=/usr/local/sbin/geo-vm-init",
                        [("geo-testbed", vm.CHECKOUT, True), ("geo-exchange", v.exchange, False)])
    args += ["-nic", "none",
             "-netdev", f"tap,id=u0,ifname={v.tap},script=no,downscript=no",
             "-device", f"virtio-net-pci,netdev=u0,mac={v.mac},host_mtu={MTU}",
             "-serial", "stdio", "-monitor", "none"]
    v.proc = subprocess.Popen(["ip", "netns", "exec", netns, *args], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    prefix = "" if v.index == 1 else f"{v.name}| "
    v.reader = threading.Thread(target=show_output, args=(v, prefix), daemon=True)
    v.reader.start()


def show_output(v, prefix):
    for raw in v.proc.stdout:
        line = raw.decode(errors="replace").replace("\r", "")
        if not v.started and line.strip() == vm.RUNNING:
            v.started = True
        elif v.started and not vm.KERNEL_LINE.match(line):
            with print_lock:
                sys.stdout.write(prefix + line)
                sys.stdout.flush()
        else:
            v.boot_lines.append(line)


def failed(v, what):
    """A VMError for v stopping early, its boot's last lines shown if the
    command never started."""
    if v.reader:
        v.reader.join(timeout=5)
    if not v.started:
        sys.stdout.write("".join(v.boot_lines[-40:]))
    return vm.VmError(f"{v.name} {what}" + ("" if v.started else
                                           " (it never started: the boot's last lines are above)"))


def steer(vms, deadline, t0):
    """Relay the guests' steps (cluster-node.sh) until the head is done;
    its exit code."""
    head, others = vms[0], vms[1:]
    told_up, told_go = False, False
    while head.running():
        if time.monotonic() > deadline:
            raise vm.VmError(f"the cluster did not finish within {deadline - t0:.0f} s")
        for v in others:
            if not v.running():
                raise failed(v, "stopped before the selftest ended")
        if not told_up and head.has("ray-up"):
            say(f"Ray head up on {head.address}:{GCS_PORT} ({time.monotonic() - t0:.0f} s)")
            for v in others:
                v.tell("head-up")
            told_up = True
        if told_up and not told_go and all(v.has("joined") for v in others):
            say(f"{len(vms)} machines in the cluster ({time.monotonic() - t0:.0f} s); "
                f"the selftest starts on {head.name}")
            head.tell("go")
            told_go = True
        time.sleep(0.5)
    head.reader.join(timeout=10)
    code = head.exit_code()
    if code is None:
        raise failed(head, "stopped before the selftest ended")
    return code


def shut_down(vms, grace):
    """Ask every VM still up to leave Ray and power off; stop the ones that
    do not within `grace` seconds."""
    for v in vms:
        if v.running():
            v.tell("stop")
    deadline = time.monotonic() + grace
    for v in vms:
        if v.proc is None:
            continue
        try:
            v.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            v.proc.kill()
            v.proc.wait()


def selftest_args(extra):
    """What follows `--`, or the default two DCs on VMs 1 and 2."""
    if "--place" in extra or any(a.startswith("--place=") for a in extra):
        return extra
    return ["--place", f"east={SUBNET}.1", "--place", f"west={SUBNET}.2", *extra]


def run_cluster(args, image, accel):
    netns = f"tbvmcl{os.getpid()}"
    vms = [Vm(i + 1) for i in range(args.machines)]
    head = vms[0].address
    t0 = time.monotonic()
    grace = 0.0                 # after a failure or Ctrl-C, nothing to wait for
    try:
        netns_up(netns, vms)
        for v in vms:
            script_args = [v.mac, v.address, head]
            if v is vms[0]:
                script_args += selftest_args(args.extra)
            boot(v, netns, image, accel, args.cpus, args.memory, script_args)
        say(f"{args.machines} VMs booting, {', '.join(v.address for v in vms)} on a bridge in "
            f"the network namespace {netns}")
        code = steer(vms, t0 + args.timeout, t0)
        grace = GRACE
        return code
    finally:
        shut_down(vms, grace)
        netns_down(netns)
        for v in vms:
            shutil.rmtree(v.exchange, ignore_errors=True)


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("extra", nargs="*", help="after --: testbed selftest's FILE and options")
    p.add_argument("--machines", type=int, default=2, help="how many VMs (at least 2)")
    p.add_argument("--cpus", type=int, default=2, help="vCPUs of each VM")
    p.add_argument("--memory", default="4G", help="memory of each VM")
    p.add_argument("--timeout", type=float, default=3600.0,
                   help="seconds before the VMs are stopped (the run counts as failed)")
    args = p.parse_args()
    if args.machines < 2 or args.machines > 254 or args.cpus < 1 or args.timeout <= 0:
        p.error("--machines is 2 to 254; --cpus and --timeout must be positive")
    if os.geteuid() != 0:
        print("vm/cluster.py must run as root (network namespaces, the image).", file=sys.stderr)
        return 2
    if shutil.which(vm.QEMU) is None:
        print(f"{vm.QEMU} is not installed: run vm/tools.sh.", file=sys.stderr)
        return 2
    # A SIGTERM or SIGHUP unwinds like Ctrl-C, so the VMs and namespace go.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    started = time.monotonic()
    try:
        image = vm.image_dir()
        accel, why = vm.choose_accel(image)
        print(f"VM: {accel.upper()} ({why}), {args.machines} VMs of {args.cpus} vCPUs and "
              f"{args.memory} memory, image {image}", flush=True)
        code = run_cluster(args, image, accel)
        say(f"the selftest exited {code}, {time.monotonic() - started:.0f} s after the boot began")
        return code
    except vm.VmError as e:
        print(f"VM: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("VM: interrupted; the VMs and their namespace were removed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
