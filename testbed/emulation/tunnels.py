"""The VXLAN tunnels that carry WAN links between machines.

Each tunnel is created in the namespace the machine's builder runs in,
where its underlay address lives (the tunnel's UDP socket stays there),
then moved into the emulated node that holds that end of the link and
given the emulated MTU, so the router or delay line sees an ordinary
interface of 1500 bytes.  The node's namespace takes the device with it
when it goes, so a run leaves no tunnel behind; one that fails between
creating and moving it is removed by name (`testbed clean` knows it from
the run's state).
"""

import ipaddress
import json
import subprocess

from testbed.emulation.share import EMULATED_MTU, UNDERLAY_MTU, VXLAN_PORT

OFFLOADS = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]


class TunnelError(RuntimeError):
    """A tunnel cannot be made here; one sentence."""


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise TunnelError(f"`ip {' '.join(args)}` failed: {(r.stderr or r.stdout).strip()}")
    return r.stdout


def underlay_device(address):
    """(interface, MTU) of the interface that holds `address` here."""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise TunnelError(f"{address!r} is not an IP address") from None
    for item in json.loads(_ip("-j", "addr", "show") or "[]"):
        if any(a.get("local") == address for a in item.get("addr_info", ())):
            return item["ifname"], item["mtu"]
    raise TunnelError(f"no interface of this machine has the underlay address {address}")


def open_all(net, plan, share):
    """Every crossing link's tunnel end, in its node and up to be configured."""
    if not share.tunnels:
        return
    dev, mtu = underlay_device(share.tunnels[0].local)
    if mtu < UNDERLAY_MTU:
        raise TunnelError(f"the underlay interface {dev} has MTU {mtu}; a WAN link between "
                          f"machines needs {UNDERLAY_MTU} (1500 bytes of frame and 50 of VXLAN): "
                          f"set `ip link set {dev} mtu {UNDERLAY_MTU}` on every machine")
    for t in share.tunnels:
        node_name, name = share.tunnel_end(plan, plan.wan[t.link])
        node = net[node_name]
        _ip("link", "add", name, "type", "vxlan", "id", str(t.vni), "local", t.local,
            "remote", t.remote, "dstport", str(VXLAN_PORT), "dev", dev)
        try:
            _ip("link", "set", name, "netns", str(node.pid))
        except TunnelError:
            _ip("link", "del", name, check=False)
            raise
        for args in (["ip", "link", "set", name, "mtu", str(EMULATED_MTU)],
                     ["ip", "link", "set", name, "up"]):
            _in_node(node, args)
        _in_node(node, ["ethtool", "-K", name, *OFFLOADS], check=False)


def _in_node(node, args, check=True):
    r = subprocess.run(["mnexec", "-a", str(node.pid), *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise TunnelError(f"{node.name}: `{' '.join(args)}` failed: {(r.stderr or r.stdout).strip()}")
