"""NetStorm as an overlay: every DC's first server is a node, a policy
(routes, each root's tree and the roots' metric, from link speeds) is
turned into a Plan every node computes alike."""

from agents.dataplane.plan import Piece, Plan
from agents.overlay.netstorm.routes import PIECE, all_routes, performance, split, tree_parents
from agents.plugins import Option, settings

OPTIONS = (
    Option("roots", 0, "R, the best roots kept by their metric (0: every DC)", low=0, high=10**4),
    Option("piece", PIECE, "elements per piece at most (MXNet's big-array bound)",
           low=1, high=10**9),
    Option("multipath", 1, "relay over an auxiliary path when the primary next hop is backed up "
           "(1) or never (0)", low=0, high=1),
    Option("queue_limit", 1, "L: detour when the primary next hop holds more than 2L messages "
           "and the detour's fewer than L", low=1, high=10**4),
    Option("sample_bytes", 2_000_000, "messages of at least this many bytes between DCs' "
           "servers are link-speed samples", low=1, high=10**10),
    Option("samples", 4, "samples summed into one speed report", low=1, high=10**4),
    Option("report_change", 0.0, "a speed is reported when it moved by more than this share",
           low=0.0, high=10.0),
    Option("check_period", 2.0, "seconds between two checks for a re-plan", low=0.1, high=3600.0),
    Option("update_change", 0.0, "re-plan when the speeds moved by more than this mean share",
           low=0.0, high=10.0),
    Option("replan", 1, "re-plan as speeds change (1) or keep the first policy (0)", low=0, high=1),
)


def option(layout, key):
    """One of NetStorm's options as the layout carries it, default filled in."""
    return layout.options[key] if key in layout.options else DEFAULTS[key]


DEFAULTS = settings(OPTIONS)


def servers_by_dc(layout):
    """{dc: its first server}: the overlay node of each DC."""
    out = {}
    for name, dc in layout.servers:
        out.setdefault(dc, name)
    return out


def overlay_dcs(layout):
    """The DCs of the overlay, in the layout's order."""
    nodes = servers_by_dc(layout)
    return [dc for dc in layout.dcs if dc in nodes]


def refuse(server_counts, worker_counts=None):
    """Why DCs with these numbers of servers ({dc: n}) cannot run
    NetStorm, or None: it relays at every DC's server, transit DCs' too."""
    bare = [dc for dc, n in server_counts.items() if n < 1]
    if bare:
        return (f"netstorm relays at a server in every DC, and {', '.join(bare)} "
                f"{'has' if len(bare) == 1 else 'have'} none")
    return None


def takes_part(name, layout):
    return name in layout.worker_names or name in servers_by_dc(layout).values()


def compute_policy(speeds, order, layout):
    """The policy for these speeds ({(a, b): bytes/s} per direction): every
    root's tree, the roots' metric and the routes between neighbours, as
    JSON-ready data."""
    keep = option(layout, "roots") or None
    routes = all_routes(speeds, order, bool(option(layout, "multipath")))
    perf = performance(routes, speeds, order, keep)
    neighbour_routes = {f"{a}>{b}": [list(p) for p in routes[(a, b)]]
                        for (a, b) in speeds if (a, b) in routes}
    return {"perf": perf,
            "parents": {r: tree_parents(routes, order, r) for r in order if perf[r] > 0},
            "routes": neighbour_routes}


def plan_of(policy, layout):
    """The Plan a policy gives: pieces split by the roots' metric, each
    reduced up and sent down its root's tree of servers, every worker
    below its DC's server."""
    nodes = servers_by_dc(layout)
    order = overlay_dcs(layout)
    pieces = []
    for start, stop, root in split(layout.size, policy["perf"], order, option(layout, "piece")):
        parent = {w: nodes[dc] for w, dc in layout.workers}
        parent.update({nodes[dc]: nodes[up] for dc, up in policy["parents"][root].items()})
        children = {}
        for child, up in sorted(parent.items()):
            children.setdefault(up, []).append(child)
        pieces.append(Piece(start, stop, nodes[root], parent, children))
    return Plan(layout.size, tuple(layout.worker_names), tuple(pieces)).validate()
