"""Small WANs for the planner's tests, as Layouts."""

import networkx as nx

from agents.overlay.layout import Layout

C = 1_000_000.0          # bytes/s


def kite(**options):
    """d0, d1, d2 in a triangle and d3 hanging off d2, every link C and
    10 ms each way, a server and a worker in every DC; routes the fewest hops."""
    return layout_over([("d0", "d1"), ("d1", "d2"), ("d0", "d2"), ("d2", "d3")], **options)


def layout_over(pairs, **options):
    dcs = sorted({dc for pair in pairs for dc in pair})
    links = [[a, b, C * 8, C * 8, 0.01, 0.01] for a, b in pairs]
    graph = nx.Graph(pairs)
    routes = {f"{a}>{b}": nx.shortest_path(graph, a, b) for a in dcs for b in dcs if a != b}
    return Layout(size=4000, workers=[[f"{d}-w0", d] for d in dcs], servers=[[f"{d}-s0", d] for d in dcs],
                  server_dc="d0", dcs=dcs, links=links, routes=routes, options=options)
