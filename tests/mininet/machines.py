"""Network namespaces as machines, for tests of one WAN over several.

A driver namespace holds the underlay (a Linux bridge) and the Ray head;
each machine namespace has its own underlay address on that bridge (MTU
1550, so the tunnels carry 1500-byte frames), its own Ray node offering
the `testbed` resource and its own state folder, so `testbed clean` in one
never sees another's runs.  Nothing is made in the host's namespace.
What this cannot show: separate clocks, CPUs or NICs (two VMs do).
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
SUBNET = "198.51.100"          # TEST-NET-2: never a real network
DRIVER_IP = f"{SUBNET}.254"
MTU = "1550"
NODE_MODULE = "testbed.spanning.node"


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def pids_in(netns):
    out = ip("netns", "pids", netns, check=False).stdout
    return [int(p) for p in out.split()]


class NamespaceMachines:
    def __init__(self, count, tag=None):
        tag = tag or f"{os.getpid() % 100000}"
        self.driver = f"tbm{tag}d"
        self.names = [f"tbm{tag}{chr(ord('a') + i)}" for i in range(count)]
        self.address = {n: f"{SUBNET}.{i + 1}" for i, n in enumerate(self.names)}
        self.state_dirs = {n: f"/run/geo-testbed-{n}" for n in self.names}
        self.temp = tempfile.mkdtemp(prefix="tbray", dir="/tmp")   # short: Ray puts sockets in it
        self.head = None

    def up(self, port):
        ip("netns", "add", self.driver)
        self.run_in(self.driver, ["ip", "link", "set", "lo", "up"])
        self.run_in(self.driver, ["ip", "link", "add", "br0", "type", "bridge"])
        # Bridged frames never reach the driver namespace's netfilter.
        self.run_in(self.driver, ["sysctl", "-qw"] + [f"net.bridge.bridge-nf-call-{t}=0" for t in
                                                      ("iptables", "ip6tables", "arptables")],
                    check=False)
        self.run_in(self.driver, ["ip", "addr", "add", f"{DRIVER_IP}/24", "dev", "br0"])
        self.run_in(self.driver, ["ip", "link", "set", "br0", "mtu", MTU, "up"])
        for n in self.names:
            ip("netns", "add", n)
            self.run_in(n, ["ip", "link", "set", "lo", "up"])
            ip("link", "add", "u0", "netns", n, "type", "veth", "peer", "name", n[-1] + "0",
               "netns", self.driver)
            self.run_in(n, ["ip", "addr", "add", f"{self.address[n]}/24", "dev", "u0"])
            self.run_in(n, ["ip", "link", "set", "u0", "mtu", MTU, "up"])
            port_name = n[-1] + "0"
            self.run_in(self.driver, ["ip", "link", "set", port_name, "mtu", MTU])
            self.run_in(self.driver, ["ip", "link", "set", port_name, "master", "br0"])
            self.run_in(self.driver, ["ip", "link", "set", port_name, "up"])
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        self.run_in(self.driver, [RAY, "start", "--head", "--port", str(port), "--node-ip-address",
                                  DRIVER_IP, "--num-cpus", "0", "--disable-usage-stats",
                                  "--include-dashboard=false", "--temp-dir", self.temp], env=env,
                    timeout=120)
        self.head = f"{DRIVER_IP}:{port}"
        for n in self.names:
            self.run_in(n, ["env", f"TESTBED_STATE_DIR={self.state_dirs[n]}", RAY, "start",
                            "--address", self.head, "--node-ip-address", self.address[n],
                            "--resources", json.dumps({"testbed": 1}), "--num-cpus", "1",
                            "--disable-usage-stats"], env=env, timeout=120)
        return self

    def clean(self, name):
        """`testbed clean` on one machine; its output."""
        r = self.run_in(name, ["env", f"TESTBED_STATE_DIR={self.state_dirs[name]}", sys.executable,
                               "-m", "testbed.cli", "clean"], check=False)
        return r.stdout + r.stderr

    def run_in(self, netns, argv, check=True, env=None, timeout=60):
        return subprocess.run(["ip", "netns", "exec", netns, *argv], check=check,
                              capture_output=True, text=True, env=env, timeout=timeout)

    def down(self):
        """Every process in the namespaces (Ray, node servers, what they
        started), then the namespaces, then the state and temp folders."""
        spaces = [self.driver, *self.names]
        # The node servers first: each tears its part of a network down.
        servers = [pid for ns in self.names for pid in pids_in(ns) if NODE_MODULE in cmdline(pid)]
        for pid in servers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while any(os.path.exists(f"/proc/{p}") for p in servers) and time.monotonic() < deadline:
            time.sleep(0.2)
        for sig, grace in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
            for ns in spaces:
                for pid in pids_in(ns):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + grace
            while any(pids_in(ns) for ns in spaces) and time.monotonic() < deadline:
                time.sleep(0.2)
        for n in self.names:
            # What a killed node server left, by that machine's own state.
            self.clean(n)
        for ns in spaces:
            ip("netns", "del", ns, check=False)
        for d in self.state_dirs.values():
            shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(self.temp, ignore_errors=True)
