"""A hierarchical parameter server: the DCs are grouped in regions, each
region's first server sums its workers' contributions, and the region
sums go to the root (the server DC's first server); the new values come
back down the same two levels.  Over a WAN whose regions are far apart,
each region sends one sum across the long links instead of one per
worker."""

from agents.dataplane.plan import Piece, Plan
from agents.overlay.base import StaticOverlay
from agents.plugins import Option


class RegionalPS(StaticOverlay):
    NAME = "regional-ps"
    DESCRIPTION = "a hierarchical PS: a server per region sums its DCs, then the root"
    OPTIONS = (Option("regions", [], "lists of DC names, one per region (unlisted DCs: a region "
                                     "each)", item=Option("dcs", [], item=Option("dc", ""))),)

    def regions(self, layout):
        listed = [list(r) for r in self.options["regions"]]
        seen = {dc for r in listed for dc in r}
        return listed + [[dc] for dc in layout.dcs if dc not in seen]

    def refuse(self, servers, workers):
        for region in self.options["regions"]:
            unknown = [dc for dc in region if dc not in servers]
            if unknown:
                return f"regional-ps: unknown data center {unknown[0]} in regions"
        return None

    def plan(self, layout):
        root = layout.roots()[0]
        first_server = {}
        for name, dc in layout.servers:
            first_server.setdefault(dc, name)
        parent = {}
        for region in self.regions(layout):
            servers = [first_server[dc] for dc in region if dc in first_server]
            head = root if layout.server_dc in region else (servers[0] if servers else root)
            if head != root:
                parent[head] = root
            for name, dc in layout.workers:
                if dc in region:
                    parent[name] = head
        children = {}
        for node, up in sorted(parent.items()):
            children.setdefault(up, []).append(node)
        return Plan(layout.size, tuple(layout.worker_names),
                    (Piece(0, layout.size, root, parent, children),)).validate()
