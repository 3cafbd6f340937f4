"""The part of one emulated WAN that one machine builds, when the WAN spans
several machines: pure data, made once by the driver and sent to each.

Whole data centers go to a machine (router, bridge, hosts), so only WAN
links cross machines.  A crossing link is carried by a VXLAN tunnel, one
VNI per link, between the two machines' underlay addresses; each end of
the tunnel is an ordinary interface in the namespace where the local
network would have had its veth end: the router's WAN interface, or, on
the machine of the link's first DC (`a`), the delay line's far side.  So
each direction is still shaped at its sending router's egress, and the
delay line stays in one place per link, on a's machine; the underlay's own
one-way time, measured before the build, is taken off the link's delay.
So a link means the same wherever its ends land.

The VXLAN header takes 50 bytes of the underlay's frame, so an emulated
MTU of 1500 needs an underlay MTU of at least 1550 (UNDERLAY_MTU).
"""

from dataclasses import dataclass, replace

VXLAN_PORT = 4789
VXLAN_OVERHEAD = 50
EMULATED_MTU = 1500
UNDERLAY_MTU = EMULATED_MTU + VXLAN_OVERHEAD
LINK_BITS = 10                 # a run's VNIs: its base, then a link index under 1024
MAX_VNI = (1 << 24) - 1


@dataclass(frozen=True)
class Tunnel:
    link: int        # index of the WAN link in the topology
    vni: int
    local: str       # this machine's underlay address
    remote: str      # the other end's
    lag: float = 0.0  # seconds the underlay takes one way, taken off the link's delay


def lagged(direction, lag):
    """A direction whose frames also cross an underlay taking `lag` seconds:
    its delay less the lag, so the two add up to the configured delay (never
    below its jitter, which the delay must hold)."""
    return replace(direction, delay=max(direction.jitter, direction.delay - lag))


def lagged_spec(spec, share):
    """spec with every link that crosses to another machine lagged."""
    wan = list(spec.wan)
    for t in share.tunnels:
        link = wan[t.link]
        wan[t.link] = replace(link, ab=lagged(link.ab, t.lag), ba=lagged(link.ba, t.lag))
    return replace(spec, wan=tuple(wan))


@dataclass(frozen=True)
class Share:
    machine: str
    dcs: frozenset
    tunnels: tuple = ()

    def local(self, dc):
        return dc in self.dcs

    def tunnel(self, index):
        """The Tunnel of WAN link `index` if it crosses to another machine."""
        return next((t for t in self.tunnels if t.link == index), None)

    def shapes(self, w, src):
        """Whether this machine shapes the direction of link w leaving src."""
        return src in self.dcs

    def delays(self, w):
        """Whether this machine runs link w's delay line (a's machine does)."""
        return w.a in self.dcs

    def tunnel_end(self, plan, w):
        """(node, interface) that is this machine's end of link w's tunnel."""
        if w.a in self.dcs:
            return (w.relay, w.relay_b) if w.relay else (plan.router(w.a).node, w.intf_a)
        return plan.router(w.b).node, w.intf_b

    def to_dict(self):
        return {"machine": self.machine, "dcs": sorted(self.dcs),
                "tunnels": [vars(t) for t in self.tunnels]}

    @classmethod
    def from_dict(cls, d):
        return cls(d["machine"], frozenset(d["dcs"]), tuple(Tunnel(**t) for t in d["tunnels"]))


class ShareError(ValueError):
    """The machines given cannot hold the WAN as asked; one sentence."""


def vni(base, index):
    """Link `index`'s VNI in a run whose VNIs start at base << LINK_BITS: two
    runs with different bases never share one (the kernel refuses a second
    VXLAN device with a VNI already in use on the same port)."""
    if not 0 <= index < 1 << LINK_BITS:
        raise ShareError(f"a WAN spanning machines holds at most {1 << LINK_BITS} links")
    value = (base << LINK_BITS) | index
    if not 0 < value <= MAX_VNI:
        raise ShareError(f"VNI base {base} is out of range")
    return value


def shares(spec, machine_of, underlay, vni_base):
    """{machine: Share} for a placement {dc: machine} and the machines'
    underlay addresses {machine: address}."""
    missing = [dc.name for dc in spec.datacenters if dc.name not in machine_of]
    if missing:
        raise ShareError(f"data center {missing[0]} is placed on no machine")
    unknown = sorted(set(machine_of.values()) - set(underlay))
    if unknown:
        raise ShareError(f"machine {unknown[0]} has no underlay address")
    out = {}
    for m in underlay:
        tunnels = []
        for j, link in enumerate(spec.wan):
            ends = machine_of[link.a], machine_of[link.b]
            if ends[0] != ends[1] and m in ends:
                other = ends[1] if ends[0] == m else ends[0]
                tunnels.append(Tunnel(j, vni(vni_base, j), underlay[m], underlay[other]))
        out[m] = Share(m, frozenset(dc for dc, owner in machine_of.items() if owner == m),
                       tuple(tunnels))
    return out
