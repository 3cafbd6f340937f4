"""The testbed leaves the host as it found it: its bridged frames never meet
the host's firewall rules, and it changes no host setting to get there."""

import contextlib
import shutil
import subprocess

import pytest

from testbed.emulation import capability, network
from tests.mininet.helpers import spec_of

pytestmark = pytest.mark.mininet

TWO_DCS = """
    name: firewalled
    datacenters:
      - {name: east, workers: 1}
      - {name: west, workers: 1}
    wan:
      - {between: [east, west], bw: 20mbit, delay: 5ms}
"""


@contextlib.contextmanager
def host_bridge_nf(value):
    """The host's bridge-nf-call-* set to value for the block, then restored."""
    found = capability.bridge_nf_settings()
    if not found:
        pytest.skip("the kernel's bridge netfilter (br_netfilter) is not loaded")

    def write(values):
        for t, v in values.items():
            with open(f"/proc/sys/net/bridge/bridge-nf-call-{t}", "w") as f:
                f.write(f"{v}\n")

    write({t: value for t in found})
    try:
        yield {t: value for t in found}
    finally:
        write(found)


@contextlib.contextmanager
def iptables_rule(*rule):
    subprocess.run(["iptables", "-I", *rule], check=True)
    try:
        yield
    finally:
        subprocess.run(["iptables", "-D", *rule], check=True)


def ping(net, src, dst):
    return network.run_in(net.node(src), ["ping", "-c", "2", "-W", "2", net.ip(dst)], check=False)


@pytest.mark.skipif(shutil.which("iptables") is None, reason="needs iptables")
def test_bridged_traffic_never_meets_the_hosts_firewall_and_the_host_setting_is_kept():
    with host_bridge_nf(1) as expected:
        with network.build(spec_of(TWO_DCS)) as net:
            prefix = f"tb{net.state.run_id}"
            # Where the host's bridge netfilter sees a bridged frame of this
            # run, this rule drops it (as Docker's FORWARD rules may).
            with iptables_rule("FORWARD", "-m", "physdev", "--physdev-in", prefix + "+",
                               "-j", "DROP"):
                within_dc = ping(net, "east-w0", "east-r")
                across = ping(net, "east-w0", "west-w0")
            assert capability.bridge_nf_settings() == expected
        assert " 0% packet loss" in within_dc, within_dc
        assert " 0% packet loss" in across, across
        assert capability.bridge_nf_settings() == expected
