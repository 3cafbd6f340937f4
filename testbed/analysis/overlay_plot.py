"""Draws the overlay's trees of a run (overlay.png): a static overlay's
plan, or, for an overlay that plans on the fly, the trees its coordinator's
decisions made in the first, a middle and the last round."""

import math

ROUNDS_DRAWN = 3


def trees(events):
    """[(title, aggregation edges, distribution edges)] of piece 0, edges as
    (sender, receiver); [] when the run recorded neither a plan nor
    decisions."""
    plans = [e for evs in events.values() for e in evs if e["ev"] == "plan"]
    if plans:
        agg, dist = piece_edges(plans[0]["plan"]["pieces"][0])
        return [(f"{plans[0]['overlay']}: every iteration", agg, dist)]
    decisions = [e for evs in events.values() for e in evs
                 if e["ev"] == "decision" and e.get("piece") == 0]
    rounds = sorted({d["it"] for d in decisions})
    if not rounds:
        return []
    picked = sorted({rounds[0], rounds[len(rounds) // 2], rounds[-1]})[:ROUNDS_DRAWN]
    return [(f"iteration {it}", *round_edges(decisions, it)) for it in picked]


def piece_edges(piece):
    """(aggregation edges, distribution edges) of one piece of a plan."""
    agg = sorted(piece["parent"].items())
    dist = sorted((a, b) for a, kids in piece["children"].items() for b in kids)
    return agg, dist


def round_edges(decisions, it):
    """(aggregation edges, distribution edges) the decisions of round `it` made."""
    agg = [(d["sender"], d["receiver"]) for d in decisions
           if d["it"] == it and d["decision"] == "pair"]
    dist = [(d["sender"], d["receiver"]) for d in decisions
            if d["it"] == it and d["decision"] == "distribute"]
    return agg, dist


def positions(agents_by_dc):
    """{agent: (x, y)}: DCs on a circle, each DC's agents on a small one
    around it, in a stable order."""
    pos = {}
    dcs = sorted(agents_by_dc)
    for i, dc in enumerate(dcs):
        cx, cy = math.cos(2 * math.pi * i / len(dcs)), math.sin(2 * math.pi * i / len(dcs))
        members = sorted(agents_by_dc[dc])
        for j, agent in enumerate(members):
            a = 2 * math.pi * j / max(1, len(members))
            r = 0.18 if len(members) > 1 else 0.0
            pos[agent] = (cx + r * math.cos(a), cy + r * math.sin(a))
    return pos


def draw(path, events, dc_of):
    """Write the trees to `path`; returns [path], or [] with nothing to draw."""
    drawn = trees(events)
    if not drawn:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_dc = {}
    for agent, dc in dc_of.items():
        by_dc.setdefault(dc, []).append(agent)
    pos = positions(by_dc)
    fig, axes = plt.subplots(2, len(drawn), figsize=(4.2 * len(drawn), 8), squeeze=False)
    for col, (title, agg, dist) in enumerate(drawn):
        for row, (edges, what, color) in enumerate(((agg, "aggregation", "tab:orange"),
                                                    (dist, "distribution", "tab:blue"))):
            ax = axes[row, col]
            for agent, (x, y) in pos.items():
                ax.plot(x, y, "o", color="0.6", markersize=6)
                ax.annotate(agent, (x, y), fontsize=6, ha="center", va="bottom")
            for a, b in edges:
                if a in pos and b in pos:
                    ax.annotate("", xy=pos[b], xytext=pos[a],
                                arrowprops={"arrowstyle": "->", "color": color, "lw": 1.2})
            ax.set_title(f"{title}\n{what}", fontsize=9)
            ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]
