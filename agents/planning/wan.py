"""The WAN as a planner sees it: per-direction payload rates and delays,
and which DCs can do more than forward.

Agents are the DCs that host servers or workers: their processes can add
partial sums and copy results.  Terminals are the agents with workers: each
contributes a model's worth of gradient and needs the sum.  Every other DC
is transit: its router forwards packets and nothing else.  The numbers may
be the configured ones (the bounds) or estimated ones (a planner)."""

import functools
from dataclasses import dataclass

import networkx as nx

# TCP payload per full Ethernet frame at MTU 1500: 1448 of 1514 bytes on the
# wire.  A link's rate is its rate on the wire; goodput is this share of it.
GOODPUT_SHARE = 1448 / 1514


@dataclass(frozen=True)
class Wan:
    links: dict         # {(src, dst): (payload bytes/s, one-way delay s)}
    agents: tuple       # sorted names of the DCs that aggregate and replicate
    terminals: tuple    # sorted names of the agents whose workers contribute

    @classmethod
    def of_numbers(cls, links, agents, terminals=None):
        """From plain numbers (configured or estimated); terminals default
        to every agent."""
        agents = tuple(sorted(agents))
        terminals = agents if terminals is None else tuple(sorted(terminals))
        if not set(terminals) <= set(agents):
            raise ValueError("every terminal must be an agent")
        links = {(u, v): (float(rate), float(delay)) for (u, v), (rate, delay) in links.items()
                 if rate > 0}
        return cls(links=links, agents=agents, terminals=terminals)

    @property
    def nodes(self):
        names = set(self.agents)
        for u, v in self.links:
            names.update((u, v))
        return tuple(sorted(names))

    @property
    def steiner(self):
        """Agents without workers: they may relay and add, nothing needs them."""
        return tuple(a for a in self.agents if a not in self.terminals)

    @functools.cached_property
    def dist(self):
        """{src: {dst: least one-way delay}} over the links."""
        graph = nx.DiGraph()
        graph.add_nodes_from(self.nodes)
        for (u, v), (_, delay) in self.links.items():
            graph.add_edge(u, v, delay=delay)
        return dict(nx.all_pairs_dijkstra_path_length(graph, weight="delay"))

    def reachable(self):
        """Whether every terminal can reach every other."""
        return all(b in self.dist[a] for a in self.terminals for b in self.terminals)

