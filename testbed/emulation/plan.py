"""The emulated network as pure data: node names, interfaces, addresses, routes.

Nothing here touches the system, so the whole layout is unit-tested.

Names.  Every object a run creates in the root namespace (bridges, veth
ends) starts with the run's prefix ``tb`` + 4 hex digits, so cleanup can
find exactly its own.  Internal names stay within Linux's 15-character
interface limit whatever the user called a data center; users see the
display names (``virginia-w0``, ``virginia-r``).

Addresses.  Data center i (0-based) is 10.(i+1).0.0/24: its router is .1,
its servers and workers follow from .10, so a host's DC is its second octet.
WAN link j is a /24 of its own under 10.255.x (10.254.x past 256 links).
"""

from dataclasses import dataclass

import networkx as nx

from testbed.spec import Spec

PREFIX = "tb"
B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def base36(n):
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = B36[r] + out
        if n == 0:
            return out


def run_prefix(run_id):
    return f"{PREFIX}{run_id}"


@dataclass(frozen=True)
class HostPlan:
    name: str        # display name, e.g. virginia-w0
    node: str        # Mininet node name
    dc: str
    role: str        # router | server | worker
    ip: str
    intf: str        # LAN interface
    switch_port: str


@dataclass(frozen=True)
class WanPlan:
    index: int
    a: str                 # DC names
    b: str
    intf_a: str            # router a's interface on this link
    intf_b: str
    ip_a: str
    ip_b: str
    relay: str = ""        # delay-line node (empty when netem does the delay)
    relay_a: str = ""      # relay's interface facing router a
    relay_b: str = ""


@dataclass(frozen=True)
class Route:
    node: str        # router node that holds the route
    dest: str        # destination prefix
    via: str         # next-hop address
    dev: str


@dataclass(frozen=True)
class ManagementPort:
    dc: str
    router: str      # router node
    intf: str        # the router's interface on the management network
    switch_port: str
    ip: str


@dataclass(frozen=True)
class ManagementPlan:
    """An unshaped network joining every router, for control traffic only:
    a router sends over it what leaves from its management address."""
    switch: str
    ports: tuple     # ManagementPort per DC

    def port(self, dc):
        for p in self.ports:
            if p.dc == dc:
                return p
        raise KeyError(dc)


@dataclass(frozen=True)
class NetworkPlan:
    run_id: str
    prefix: str
    switches: tuple          # (dc, switch node)
    hosts: tuple             # HostPlan, routers included
    wan: tuple               # WanPlan
    routes: tuple            # Route
    management: ManagementPlan = None

    def host(self, name):
        for h in self.hosts:
            if h.name == name or h.node == name:
                return h
        raise KeyError(name)

    def router(self, dc):
        return self.host(f"{dc}-r")

    def link(self, a, b):
        for w in self.wan:
            if {w.a, w.b} == {a, b}:
                return w
        raise KeyError(f"no WAN link between {a} and {b}")


def dc_subnet(i):
    return f"10.{i + 1}.0"


MANAGEMENT_SUBNET = "10.250.0"     # between the DCs' 10.1-10.32 and the WAN's 10.254-10.255


def wan_subnet(j):
    return f"10.{255 - j // 256}.{j % 256}"


def make_plan(spec: Spec, run_id: str, with_relays: bool, management=False) -> NetworkPlan:
    prefix = run_prefix(run_id)
    switches, hosts, wan = [], [], []
    host_counter = 0
    for i, dc in enumerate(spec.datacenters):
        sw = f"{prefix}s{base36(i)}"
        switches.append((dc.name, sw))
        net = dc_subnet(i)
        router = f"{prefix}r{base36(i)}"
        hosts.append(HostPlan(name=f"{dc.name}-r", node=router, dc=dc.name, role="router",
                              ip=f"{net}.1", intf=f"{router}-lan", switch_port=f"{sw}-p0"))
        for k, hname in enumerate(dc.hosts):
            node = f"{prefix}h{base36(host_counter)}"
            host_counter += 1
            role = "server" if hname.rsplit("-", 1)[1].startswith("s") else "worker"
            hosts.append(HostPlan(name=hname, node=node, dc=dc.name, role=role,
                                  ip=f"{net}.{10 + k}", intf=f"{node}-eth0",
                                  switch_port=f"{sw}-p{base36(k + 1)}"))
    routers = {dc.name: f"{prefix}r{base36(i)}" for i, dc in enumerate(spec.datacenters)}
    for j, link in enumerate(spec.wan):
        net = wan_subnet(j)
        relay = f"{prefix}d{base36(j)}" if with_relays else ""
        wan.append(WanPlan(index=j, a=link.a, b=link.b,
                           intf_a=f"{routers[link.a]}-w{base36(j)}",
                           intf_b=f"{routers[link.b]}-w{base36(j)}",
                           ip_a=f"{net}.1", ip_b=f"{net}.2", relay=relay,
                           relay_a=f"{relay}-a" if relay else "",
                           relay_b=f"{relay}-b" if relay else ""))
    routes = _routes(spec, routers, wan)
    mgmt = None
    if management:
        sw = f"{prefix}m"
        mgmt = ManagementPlan(sw, tuple(
            ManagementPort(dc.name, routers[dc.name], f"{routers[dc.name]}-m",
                           f"{sw}-p{base36(i)}", f"{MANAGEMENT_SUBNET}.{i + 1}")
            for i, dc in enumerate(spec.datacenters)))
    return NetworkPlan(run_id=run_id, prefix=prefix, switches=tuple(switches),
                       hosts=tuple(hosts), wan=tuple(wan), routes=tuple(routes), management=mgmt)


# OSPF's reference bandwidth for `routing: bandwidth`: a direction costs this over its rate.
REFERENCE_RATE = 1e11


def shortest_next_hops(spec: Spec):
    """{(src_dc, dst_dc): next_dc} along the least-cost paths of the spec's
    routing.

    `delay`: a link's cost is its round-trip delay (in whole nanoseconds,
    so equal sums compare equal).  `bandwidth`: a direction's cost is
    REFERENCE_RATE over its rate, rounded to a whole number at least 1 (as
    OSPF's interface costs, so a path's cost sums its links' inverse
    rates and the widest links win).  Ties go to fewer hops, then to the
    neighbour listed first in `datacenters`, so routes are deterministic
    and the same in both directions on symmetric links."""
    order = {dc.name: i for i, dc in enumerate(spec.datacenters)}
    g = nx.DiGraph()
    g.add_nodes_from(order)
    for link in spec.wan:
        for (a, b, d) in ((link.a, link.b, link.ab), (link.b, link.a, link.ba)):
            cost = (round((link.ab.delay + link.ba.delay) * 1e9) if spec.routing == "delay"
                    else max(1, round(REFERENCE_RATE / d.rate)))
            g.add_edge(a, b, cost=cost)
    hops = {}
    for src in order:
        for dst in order:
            if dst != src:
                paths = nx.all_shortest_paths(g, src, dst, weight="cost")
                best = min(paths, key=lambda path: (len(path), order[path[1]]))
                hops[(src, dst)] = best[1]
    return hops


def _routes(spec, routers, wan):
    index = {dc.name: i for i, dc in enumerate(spec.datacenters)}
    by_pair = {}
    for w in wan:
        by_pair[(w.a, w.b)] = (w.intf_a, w.ip_b)
        by_pair[(w.b, w.a)] = (w.intf_b, w.ip_a)
    routes = []
    for (src, dst), hop in sorted(shortest_next_hops(spec).items(),
                                  key=lambda kv: (index[kv[0][0]], index[kv[0][1]])):
        dev, via = by_pair[(src, hop)]
        routes.append(Route(node=routers[src], dest=f"{dc_subnet(index[dst])}.0/24",
                            via=via, dev=dev))
    return routes
