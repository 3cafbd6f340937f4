"""What an overlay plans from: the model's size and its tensors' sizes,
who runs where, and the WAN as configured, as plain numbers (no testbed
objects), so overlays are pure functions of it and the runner writes it
into each agent's config (the agents fill in the sizes)."""

import dataclasses
from dataclasses import dataclass, field

import networkx as nx


@dataclass
class Layout:
    size: int                      # elements of the flat model
    workers: list                  # [[name, dc]]
    servers: list                  # [[name, dc]], every DC's
    server_dc: str
    dcs: list                      # every DC name, transit DCs included
    links: list                    # [[a, b, rate a->b, rate b->a, delay a->b, delay b->a]]
    options: dict = field(default_factory=dict)   # the overlay's parameters
    routes: dict = field(default_factory=dict)    # {"a>b": [a, ..., b]}: the routers' paths
    tensors: list = field(default_factory=list)   # elements of each tensor in flat order ([]: unknown)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)

    def to_dict(self):
        return dataclasses.asdict(self)

    def option(self, key, default):
        return self.options.get(key, default)

    @property
    def worker_names(self):
        return [w for w, _ in self.workers]

    def wan(self):
        """The WAN as a networkx DiGraph: an edge per direction with its
        `rate` (bit/s) and `delay` (s)."""
        g = nx.DiGraph()
        g.add_nodes_from(self.dcs)
        for a, b, rab, rba, dab, dba in self.links:
            g.add_edge(a, b, rate=rab, delay=dab)
            g.add_edge(b, a, rate=rba, delay=dba)
        return g

    def delays(self):
        """{(a, b): shortest-path one-way delay} between every pair of DCs."""
        g = self.wan()
        return {(a, b): d for a, row in nx.all_pairs_dijkstra_path_length(g, weight="delay")
                for b, d in row.items()}

    def roots(self):
        """The servers in the server DC: the roots of the model's pieces."""
        return [name for name, dc in self.servers if dc == self.server_dc]
