"""A small sparse linear-program builder over scipy's HiGHS, and the
routing block every bound shares: overlay arcs (agent to agent
connections) carried over the WAN's links."""

import numpy as np

INFEASIBLE = 2


class LP:
    """minimise cost . x subject to rows (<= or ==) and per-variable bounds."""

    def __init__(self):
        self.cost, self.bounds = [], []
        self._rows = {"<=": ([], [], [], []), "==": ([], [], [], [])}

    def var(self, cost=0.0, lo=0.0, hi=None):
        self.cost.append(cost)
        self.bounds.append((lo, hi))
        return len(self.cost) - 1

    def row(self, coeffs, sense, rhs=0.0):
        """Add sum(coef * x[col]) sense rhs; returns the row's index in its kind."""
        rows, cols, vals, rhss = self._rows[sense]
        index = len(rhss)
        for col, val in coeffs:
            rows.append(index)
            cols.append(col)
            vals.append(val)
        rhss.append(rhs)
        return index

    def solve(self):
        # scipy costs half a second to import, and every testbed command
        # imports this module through the spec; only solving needs it.
        from scipy.optimize import linprog
        from scipy.sparse import coo_matrix

        def matrix(kind):
            rows, cols, vals, rhss = self._rows[kind]
            if not rhss:
                return None, None
            return coo_matrix((vals, (rows, cols)), shape=(len(rhss), len(self.cost))).tocsr(), \
                np.array(rhss)
        a_ub, b_ub = matrix("<=")
        a_eq, b_eq = matrix("==")
        return linprog(self.cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                       bounds=self.bounds, method="highs")


def overlay_arcs(nodes):
    return [(u, v) for u in nodes for v in nodes if u != v]


def add_routing(lp, wan, arcs, usable=None, paths=None):
    """Per overlay arc a its load Y_a (a variable) routed as a flow over the
    links from a's tail to its head, or, where `paths` ({arc: (dc, ...)})
    fixes its route, carried along that path alone (an arc `paths` leaves out
    carries nothing).  Returns ({arc: Y column}, {arc: {link: flow column}},
    {link: [flow columns]}) so the caller caps each link's load.
    `usable(link)` False keeps a link idle."""
    load_of, flows, on_link = {}, {}, {link: [] for link in wan.links}
    nodes = wan.nodes
    for arc in arcs:
        if paths is not None:
            path = paths.get(arc)
            links = list(zip(path, path[1:])) if path else []
            ok = bool(links) and all(link in wan.links for link in links)
            y = load_of[arc] = lp.var(hi=None if ok else 0.0)
            flows[arc] = {link: y for link in links} if ok else {}
            for link in flows[arc]:
                on_link[link].append(y)
            continue
        y = load_of[arc] = lp.var()
        flows[arc] = {}
        balance = {w: [] for w in nodes}
        for link in wan.links:
            if usable is not None and not usable(link):
                continue
            f = flows[arc][link] = lp.var()
            on_link[link].append(f)
            balance[link[0]].append((f, 1.0))
            balance[link[1]].append((f, -1.0))
        balance[arc[0]].append((y, -1.0))
        balance[arc[1]].append((y, 1.0))
        for terms in balance.values():
            lp.row(terms, "==")
    return load_of, flows, on_link


def add_flow(lp, arcs, capacity_of, src, dst, value_col, times=1.0):
    """A flow of `times` x value_col from src to dst over `arcs`, each arc's
    flow at most its capacity column."""
    nodes = sorted({n for arc in arcs for n in arc})
    balance = {n: [] for n in nodes}
    for arc in arcs:
        f = lp.var()
        lp.row([(f, 1.0), (capacity_of[arc], -1.0)], "<=")
        balance[arc[0]].append((f, 1.0))
        balance[arc[1]].append((f, -1.0))
    balance[src].append((value_col, -times))
    balance[dst].append((value_col, times))
    for terms in balance.values():
        lp.row(terms, "==")
