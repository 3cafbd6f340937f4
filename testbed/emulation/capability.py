"""What this machine can emulate: tools, kernel qdiscs, settings.

Each check says what is missing and how to fix it; `testbed doctor` prints
them all and the network builder refuses to start without the essentials.
"""

import os
import shutil
import subprocess
from dataclasses import dataclass

from testbed.emulation.delay import delayline_binary, delayline_runs

TOOLS = {
    "mnexec": "apt-get install mininet (or run scripts/install.sh)",
    "brctl": "apt-get install bridge-utils",
    "iperf3": "apt-get install iperf3",
    "ethtool": "apt-get install ethtool",
    "tc": "apt-get install iproute2",
    "ip": "apt-get install iproute2",
    "ping": "apt-get install iputils-ping",
}
QDISCS = ("htb", "netem", "bfifo")
BRIDGE_NF = ("iptables", "ip6tables", "arptables")
DELAY_BACKENDS = ("auto", "netem", "crelay", "relay")
# The package carries the delay line's source, so an install without the
# repository's script can build it too.
DELAYLINE_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "delayline.c")
BUILD_DELAYLINE = (f"build it with scripts/install.sh, or cc -O2 -o {delayline_binary()} "
                   f"{DELAYLINE_SOURCE} -lm (needs gcc: apt-get install gcc libc6-dev), "
                   "or set TESTBED_DELAYLINE to its path")


class CapabilityError(RuntimeError):
    """Something the machine lacks; the message says what and how to fix it."""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    essential: bool = True


def is_root():
    return os.geteuid() == 0


def missing_tools():
    return [t for t in TOOLS if shutil.which(t) is None]


def qdisc_available(kind):
    """Try the qdisc on the loopback of a throwaway namespace: exact, and the
    namespace dies with the command, so nothing is ever left behind."""
    if not is_root() or shutil.which("unshare") is None or shutil.which("tc") is None:
        return False
    args = {"htb": "handle 1: htb", "netem": "netem delay 1ms", "bfifo": "bfifo limit 10000"}[kind]
    r = subprocess.run(["unshare", "-n", "sh", "-c", f"tc qdisc add dev lo root {args}"],
                       capture_output=True)
    return r.returncode == 0


def bridge_nf_settings():
    """{table: value} for the bridge-netfilter sysctls present (module loaded)."""
    values = {}
    for t in BRIDGE_NF:
        path = f"/proc/sys/net/bridge/bridge-nf-call-{t}"
        try:
            with open(path) as f:
                values[t] = int(f.read().strip())
        except OSError:
            pass
    return values


def bridge_nf_detail(settings):
    """What the host's bridge-netfilter switches mean for the testbed: nothing,
    as its bridges live in namespaces of their own, and it leaves them be."""
    where = "the testbed's bridges live in namespaces of their own and never meet host rules"
    if not settings:
        return f"module not loaded; {where}"
    values = ", ".join(f"{t}={v}" for t, v in settings.items())
    return f"host bridge-nf-call {values}, left as it is: {where}"


def choose_delay_backend(requested="auto"):
    """netem where the kernel has it, else the compiled delay line where it
    is built, else the Python one."""
    if requested not in DELAY_BACKENDS:
        raise CapabilityError(f"unknown delay backend {requested!r}; "
                              f"choose one of {', '.join(DELAY_BACKENDS)}")
    if requested == "relay":
        return requested
    if requested == "crelay":
        if not delayline_runs():
            raise CapabilityError(f"the delay backend crelay was asked for but the compiled delay "
                                  f"line {delayline_binary()} is missing or does not run: "
                                  f"{BUILD_DELAYLINE}")
        return requested
    has_netem = qdisc_available("netem")
    if requested == "netem" and not has_netem:
        raise CapabilityError("the delay backend netem was asked for but this kernel has no "
                              "sch_netem: load it (modprobe sch_netem; on Ubuntu install "
                              "linux-modules-extra-$(uname -r)) or use --delay-backend crelay")
    if requested == "auto":
        return "netem" if has_netem else "crelay" if delayline_runs() else "relay"
    return requested


def detect_virt(kind):
    """What systemd-detect-virt names for `kind` ("vm" or "container"):
    "kvm", "qemu", "docker", ..., "none"; None where it is not installed."""
    if shutil.which("systemd-detect-virt") is None:
        return None
    r = subprocess.run(["systemd-detect-virt", f"--{kind}"], capture_output=True, text=True)
    return r.stdout.strip() or "none"


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def vm_from_files(cpuinfo, dmi_vendor):
    """The hypervisor as /proc/cpuinfo and DMI tell it, where systemd-detect-
    virt is missing: the CPU's `hypervisor` flag says there is one, DMI's
    system vendor (QEMU, VMware, innotek for VirtualBox, ...) which."""
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                  if line.startswith("flags")), [])
    if "hypervisor" not in flags:
        return "none"
    return dmi_vendor.strip() or "a hypervisor"


def virtualization_detail(vm, container):
    """doctor's sentence on where it runs: which hypervisor, which container."""
    where = f"in a virtual machine ({vm})" if vm != "none" else "not in a virtual machine"
    if container not in (None, "none"):
        where += f", in a container ({container})"
    return where


def virtualization_check():
    vm = detect_virt("vm")
    if vm is None:
        vm = vm_from_files(read_text("/proc/cpuinfo"), read_text("/sys/class/dmi/id/sys_vendor"))
    return Check("virtualization", True, virtualization_detail(vm, detect_virt("container")),
                 essential=False)


def delay_backend_check():
    """doctor's line on what emulates delay here, and how to get the cheaper
    delay line when it falls back to the Python one."""
    backend = choose_delay_backend()
    if backend == "netem":
        return Check("delay backend of a run", True, "netem (kernel sch_netem)")
    if backend == "crelay":
        return Check("delay backend of a run", True, f"crelay (compiled userspace delay line, "
                                            f"{delayline_binary()})")
    return Check("delay backend of a run", False,
                 f"relay (Python userspace delay line, two to three times the CPU per frame): the compiled "
                 f"one, {delayline_binary()}, is missing or does not run",
                 BUILD_DELAYLINE, essential=False)


def require_network_capabilities():
    """Raise CapabilityError naming the first thing that stops a network build."""
    if not is_root():
        raise CapabilityError("building the emulated network needs root (Mininet creates "
                              "namespaces and links): run it with sudo")
    missing = missing_tools()
    if missing:
        raise CapabilityError(f"{missing[0]} is not installed: {TOOLS[missing[0]]}")
    if not qdisc_available("htb"):
        raise CapabilityError("this kernel has no sch_htb, which shapes every WAN link: "
                              "load it with modprobe sch_htb")
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        raise CapabilityError("the Python package mininet is missing: run scripts/install.sh "
                              "(or pip install mininet==2.3.0.dev6)") from None


def checks():
    """Everything doctor reports, in order."""
    out = [Check("root", is_root(), "running as root" if is_root() else "not root",
                 "run testbed as root (sudo)")]
    for tool, fix in TOOLS.items():
        path = shutil.which(tool)
        out.append(Check(tool, path is not None, path or "not found", fix))
    try:
        import mininet
        out.append(Check("mininet (python)", True, os.path.dirname(mininet.__file__)))
    except ImportError:
        out.append(Check("mininet (python)", False, "not importable",
                         "run scripts/install.sh (pip install mininet==2.3.0.dev6)"))
    for kind in QDISCS:
        ok = qdisc_available(kind)
        essential = kind != "netem"
        fix = {"netem": "optional: modprobe sch_netem (Ubuntu: install "
                        "linux-modules-extra-$(uname -r)); without it the userspace delay line is used",
               }.get(kind, f"modprobe sch_{kind}")
        out.append(Check(f"qdisc {kind}", ok, "available" if ok else "missing", fix, essential))
    out.append(Check("bridge netfilter", True, bridge_nf_detail(bridge_nf_settings())))
    out.append(virtualization_check())
    out.append(delay_backend_check())
    return out
