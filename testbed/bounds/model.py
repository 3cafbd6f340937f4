"""The configured WAN of a topology, as the bounds see it."""

from agents.planning.wan import Wan
from testbed.bounds.cut import network_of


def wan_of(spec):
    """The Wan of a validated Spec or of its JSON form (spec.json): rates and
    delays as cut.py reads them (payload share, least delay)."""
    workers, links = network_of(spec)
    if isinstance(spec, dict):
        servers = {d["name"]: d.get("servers", 0) for d in spec["datacenters"]}
    else:
        servers = {d.name: d.servers for d in spec.datacenters}
    agents = [name for name in workers if workers[name] + servers[name] > 0]
    terminals = [name for name in workers if workers[name] > 0]
    return Wan.of_numbers(links, agents, terminals)
