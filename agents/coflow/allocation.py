"""Building blocks the policies share: BSSI ordering, greedy order-preserving
rates, and max-min fair rates by progressive filling.

Rates are keyed by flow key (coflow id, flow index).  `remaining` maps each
unfinished flow's key to its bytes left; finished flows are absent.

A port that rates fill to its capacity is left, in floating point, with a
few units in the last place of that capacity (taking 4e6 / 3 from 4e6
three times leaves 2^-31), not with nothing; handed on, that dust is a
rate no sender can keep and a bottleneck time of ages.  So a residual
under DUST of its port's capacity is none (`settle`), wherever rates are
taken from a port.
"""

import numpy as np

EPS = 1e-12
DUST = 1e-9


def settle(residual, capacity):
    """Zero, in place, the residuals that are rounding dust: under DUST
    of their port's capacity.  Returns `residual`."""
    residual[residual <= DUST * capacity] = 0.0
    return residual


def bssi(demands, weights):
    """Sincronia's Bottleneck-Select-Scale-Iterate.

    demands: (n, ports) array; weights: n numbers.  Returns the row indices,
    highest priority first.  Semantics of the reference code
    (sincronia-coflow/simulator, offlinesim/primal_dual.cpp): b is the most
    loaded port (first on ties); among coflows with demand at b the one with
    the smallest weight / demand-at-b (first on ties) goes last; the others'
    weights drop by that ratio times their demand at b.
    """
    d = np.array(demands, dtype=float)
    w = np.array(weights, dtype=float)
    n = len(w)
    left = np.ones(n, dtype=bool)
    order = [0] * n
    for k in range(n - 1, -1, -1):
        load = d[left].sum(axis=0)
        b = int(np.argmax(load))
        idx = np.flatnonzero(left)
        at_b = d[idx, b]
        has = at_b > 0
        if not has.any():
            # No coflow left has demand (all finished their bytes): keep the given order.
            for j, i in enumerate(idx[::-1]):
                order[k - j] = int(i)
            break
        ratio = np.full(len(idx), np.inf)
        ratio[has] = w[idx[has]] / at_b[has]
        pick = int(np.argmin(ratio))
        chosen = int(idx[pick])
        beta = ratio[pick]
        order[k] = chosen
        left[chosen] = False
        w[left] -= beta * d[left, b]
    return order


def greedy(order, coflows, remaining, fabric, residual=None):
    """Strict priority with work conservation: walking coflows in `order`,
    each unfinished flow takes min(residual at its source port, residual at
    its destination port).  Returns (rates, residual)."""
    m = fabric.machines
    res = settle(fabric.capacity.copy() if residual is None else residual, fabric.capacity)
    # Once every ingress or every egress port is full, nobody else can send.
    free_in = int(np.count_nonzero(res[:m]))
    free_out = int(np.count_nonzero(res[m:]))
    rates = {}
    for c in order:
        if not free_in or not free_out:
            break
        if c not in coflows:
            continue
        for i, f in enumerate(coflows[c].flows):
            key = (c, i)
            if key not in remaining:
                continue
            a, b = f.src, m + f.dst
            r = min(res[a], res[b])
            if r > 0:
                rates[key] = r
                res[a] -= r
                res[b] -= r
                settle(res, fabric.capacity)
                free_in -= int(res[a] == 0)
                free_out -= int(res[b] == 0)
    return rates, res


def max_min(keys, ports_of, residual, capacity):
    """Per-flow max-min fair rates (progressive filling) for flows `keys`,
    whose ports are ports_of[k] = (ingress, egress), within `residual`
    (updated in place) of ports whose capacities are `capacity`.  Returns
    {key: rate}."""
    settle(residual, capacity)
    if not keys:
        return {}
    src = np.array([ports_of[k][0] for k in keys])
    dst = np.array([ports_of[k][1] for k in keys])
    nports = len(residual)
    rate = np.zeros(len(keys))
    frozen = np.zeros(len(keys), dtype=bool)
    while not frozen.all():
        live = ~frozen
        count = (np.bincount(src[live], minlength=nports)
                 + np.bincount(dst[live], minlength=nports)).astype(float)
        used = count > 0
        share = np.full(nports, np.inf)
        share[used] = np.maximum(residual[used], 0.0) / count[used]
        p = int(np.argmin(share))
        s = share[p]
        # Every live flow grows by s; the port(s) reaching their capacity freeze their flows.
        rate[live] += s
        np.subtract.at(residual, src[live], s)
        np.subtract.at(residual, dst[live], s)
        settle(residual, capacity)
        full = used & (residual == 0)
        full[p] = True
        residual[full] = 0.0
        hit = live & (full[src] | full[dst])
        frozen |= hit
    return {k: float(r) for k, r in zip(keys, rate) if r > 0}
