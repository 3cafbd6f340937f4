"""Lower bounds on one synchronization's time: what no system that moves
partial sums between agents can beat.

Setting.  At time 0 every terminal holds M bytes of gradient; at the end
every terminal holds their sum.  Agents (DCs with servers or workers) may
add and copy; transit DCs only forward.  A link direction carries at most c
payload bytes/s and delivers a byte d seconds after it is sent.  Schedules
move partial sums of byte positions between agents, uncoded: no coding
across positions, no subtraction.  Every system the testbed runs is one.

Per byte position the messages between agents form a one-way gossip
scheme, each message a partial sum, which tells less than everything its
sender knows.  Two families of counts follow, per position:
 (B1) cut: for every set S of agents with a terminal inside and one
      outside, a message leaves S (an outside terminal needs the inside's
      sum) and, by symmetry, one enters it;
 (B2) partition: for every partition of the agents into m parts, each
      part holding a terminal, at least 2(m - 1) messages cross between
      parts (contract every part into one party: one-way gossip among m
      parties needs 2m - 2 calls).
Summed over the M positions, with Y_a the bytes sent over overlay arc a
(agent u to agent v, carried over any WAN paths from u to v): the arcs
leaving S carry at least M, crossing arcs of a partition at least
2(m - 1) M, and the Y_a together fit in the links.  Nothing assumes
trees, rings, one root or equal pieces.

Both families are exponential; they have compact flow forms (r0 a fixed
terminal): (B1) holds iff Y carries M from r0 to every terminal t and M
from t back; (B2), when every agent is a terminal, holds iff some split
s_uv + s_vu <= Y_uv + Y_vu lets s carry 2M from r0 to every other agent
(Nash-Williams and Tutte with Edmonds' branching theorem: an undirected
capacity is 2M-partition-connected iff it has an orientation 2M-rooted-
connected from r0).  With agents that have no workers the compact form of
(B2) is not known to be valid, so the partitions are enumerated while
there are at most MAX_PARTITIONS of them; beyond that (B2) is dropped,
which only loosens the bound.

Time.  A byte sent over link e is of use only between
alpha_e = least delay from any terminal to e's tail (before that its
sender knows nothing) and T - beta_e, beta_e = d_e + least delay from e's
head to any terminal (after that it reaches none by T); bytes outside that
window can be removed without breaking (B1) or (B2).  So link e carries
at most c_e * max(0, T - alpha_e - beta_e) useful bytes, and t_win is the
least T at which the counts fit those capacities.  Feasibility grows with
T; between two consecutive window openings the capacities are linear in T,
so a bisection over the openings and one LP in the last segment give it
exactly.  On a star of N agents around a transit hub, every access link c
and d one way: t_win = 2(N - 1)/N x M/c + 2d, where the cut bound says
M/c + 2d.

A WAN whose rates change while the synchronization runs (`profile`: each
link's rate from each moment on) is bounded the same way with volumes for
capacities: link e carries at most V_e(T), the integral of its rate over
[alpha_e, T - beta_e], useful bytes.  V_e is piecewise linear in T, with
breaks where the window opens and where its end T - beta_e passes a change
of rate, so the same bisection over the breaks and one LP give the least T
exactly.  It uses the least delay each link had and leaves each link's
windows as that delay sets them, which only widens them.

t_lat, the longest least-delay path between two terminals, and t_cut, the
pairwise quickest-flow bound of cut.py (which also lets transit DCs add,
and so stays valid), bound it too, so
        t_lb = max(t_win, t_lat, t_cut).
It leaves out what cut.py leaves out: TCP, queueing, computing the sums,
workers finishing at different times.
"""

import itertools

from agents.planning.lp import INFEASIBLE, LP, add_flow, add_routing, overlay_arcs
from testbed.bounds.cut import quickest_flow_time

MAX_PARTITIONS = 5000


def t_cut(wan, model_bytes):
    """The pairwise cut bound (cut.py) between terminals."""
    pairs = itertools.permutations(wan.terminals, 2)
    return max((quickest_flow_time(wan.links, a, b, model_bytes) for a, b in pairs), default=0.0)


def t_lat(wan):
    """The longest least-delay path from one terminal to another."""
    pairs = itertools.permutations(wan.terminals, 2)
    return max((wan.dist[a].get(b, float("inf")) for a, b in pairs), default=0.0)


def t_lb(wan, model_bytes, partitions="auto", profile=None):
    """The bound of one synchronization.  profile ({link: [(s, rate), ...]},
    seconds from the synchronization's start, the first at 0, payload
    bytes/s from then on): the rates of a WAN that changes while it runs;
    `wan` then holds every link's highest rate and least delay over that
    time, which t_lat and t_cut read (that only loosens them)."""
    return max(t_win(wan, model_bytes, partitions, profile), t_lat(wan), t_cut(wan, model_bytes))


def lb_rate(wan, partitions="auto"):
    """The largest gradient rate (bytes/s of model) that (B1) and (B2) allow
    with every link at its full rate: M / lb_rate is the bound without
    delays.  partitions: "compact", "enumerate" or "auto"."""
    if len(wan.terminals) < 2:
        return float("inf")
    unit = max(rate for rate, _ in wan.links.values())
    lp = LP()
    rate = lp.var(cost=-1.0)
    load_of, _, on_link = add_routing(lp, wan, overlay_arcs(wan.agents))
    for link, cols in on_link.items():
        lp.row([(f, 1.0) for f in cols], "<=", wan.links[link][0] / unit)
    _add_counts(lp, wan, load_of, rate, partitions)
    res = lp.solve()
    return 0.0 if res.status == INFEASIBLE else -res.fun * unit


def t_win(wan, model_bytes, partitions="auto", profile=None):
    """The least T at which the counts fit the links' useful windows (with
    `profile`, as t_lb says, the volumes the changing rates give them)."""
    if len(wan.terminals) < 2:
        return 0.0
    if not wan.reachable():
        return float("inf")
    if profile is None:
        profile = {link: [(0.0, rate)] for link, (rate, _) in wan.links.items()}
    windows = _windows(wan)
    starts = _breaks(windows, profile)
    lo, hi, best = 0, len(starts) - 1, float("inf")
    while lo <= hi:                 # the first segment in which the LP is feasible
        k = (lo + hi) // 2
        end = starts[k + 1] if k + 1 < len(starts) else float("inf")
        t = _least_t_in(wan, model_bytes, windows, profile, starts[k], end, partitions)
        if t is None:
            lo = k + 1
        else:
            best, hi = t, k - 1
    return best


def _windows(wan):
    """{link: (alpha, beta)}: the link's window is [alpha, T - beta]."""
    windows = {}
    for (u, v), (_, delay) in wan.links.items():
        alpha = min(wan.dist[t].get(u, float("inf")) for t in wan.terminals)
        beta = delay + min(wan.dist[v].get(t, float("inf")) for t in wan.terminals)
        windows[(u, v)] = (alpha, beta)
    return windows


def _breaks(windows, profile):
    """The T at which some link's volume stops being linear in T, sorted:
    its window opens (alpha + beta), or its end passes a change of rate."""
    out = set()
    for link, (alpha, beta) in windows.items():
        if alpha + beta == float("inf"):
            continue
        out.add(alpha + beta)
        out.update(t + beta for t, _ in profile.get(link, ()) if t > alpha)
    return sorted(out)


def _rate_at(pieces, t):
    return next((rate for start, rate in reversed(pieces) if start <= t), 0.0)


def _carried(pieces, upto):
    """Bytes a link whose rates are `pieces` carries from 0 to `upto`."""
    total = 0.0
    for k, (start, rate) in enumerate(pieces):
        end = pieces[k + 1][0] if k + 1 < len(pieces) else float("inf")
        if upto <= start:
            break
        total += rate * (min(upto, end) - start)
    return total


def _least_t_in(wan, model_bytes, windows, profile, start, end, partitions):
    """The least T in [start, end] at which one model fits the volumes of
    the links open by `start` (each linear in T there), or None.  Time is
    scaled to M / fastest rate, loads to M."""
    unit = max(rate for pieces in profile.values() for _, rate in pieces) or 1.0
    scale = unit / model_bytes
    lp = LP()
    tau = lp.var(cost=1.0, lo=start * scale, hi=None if end == float("inf") else end * scale)
    rate = lp.var(lo=1.0, hi=1.0)
    is_open = lambda link: sum(windows[link]) <= start  # noqa: E731
    load_of, _, on_link = add_routing(lp, wan, overlay_arcs(wan.agents), usable=is_open)
    for link, cols in on_link.items():
        if is_open(link):
            alpha, beta = windows[link]
            pieces = profile.get(link, [])
            # V(T) = V(start) + slope (T - start) in this segment; the slope is
            # read inside it, since start - beta may round to just before a change.
            volume = _carried(pieces, start - beta) - _carried(pieces, alpha)
            inside = (start + end) / 2 if end != float("inf") else start + 1.0
            slope = _rate_at(pieces, inside - beta) / unit
            lp.row([(f, 1.0) for f in cols] + [(tau, -slope)], "<=",
                   volume / model_bytes - slope * start * scale)
    _add_counts(lp, wan, load_of, rate, partitions)
    res = lp.solve()
    return None if res.status == INFEASIBLE else res.x[tau] / scale


def _add_counts(lp, wan, load_of, rate, partitions):
    """(B1) and (B2) on the overlay loads, per unit of `rate`."""
    arcs = list(load_of)
    root, *others = wan.terminals
    for t in others:
        add_flow(lp, arcs, load_of, root, t, rate)
        add_flow(lp, arcs, load_of, t, root, rate)
    if partitions == "auto":
        partitions = "compact" if not wan.steiner else "enumerate"
    if partitions == "compact":
        split = {arc: lp.var() for arc in arcs}
        for u, v in arcs:
            if u < v:
                lp.row([(split[(u, v)], 1.0), (split[(v, u)], 1.0),
                        (load_of[(u, v)], -1.0), (load_of[(v, u)], -1.0)], "<=")
        for t in wan.agents:
            if t != root:
                add_flow(lp, arcs, split, root, t, rate, times=2.0)
        return
    chosen = list(itertools.islice(terminal_partitions(wan), MAX_PARTITIONS + 1))
    if len(chosen) > MAX_PARTITIONS:
        return
    for parts in chosen:
        if len(parts) < 2:
            continue
        part_of = {n: i for i, part in enumerate(parts) for n in part}
        crossing = [(load_of[a], -1.0) for a in arcs if part_of[a[0]] != part_of[a[1]]]
        lp.row(crossing + [(rate, 2.0 * (len(parts) - 1))], "<=")


def terminal_partitions(wan):
    """Every partition of the agents whose every part holds a terminal."""
    terminals = set(wan.terminals)
    for parts in _set_partitions(list(wan.agents)):
        if all(terminals & set(part) for part in parts):
            yield parts


def _set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for parts in _set_partitions(rest):
        for i in range(len(parts)):
            yield parts[:i] + [[first] + parts[i]] + parts[i + 1:]
        yield [[first]] + parts
