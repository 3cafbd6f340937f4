"""A topology as a picture: the DCs where the live page puts them, with
their hosts, and every WAN direction as its own arrow labelled with its
rate and delay."""

import math
import os

from testbed.spec.units import format_rate, format_time, plural
from testbed.ui.layout import positions

FORMATS = (".png", ".svg", ".pdf")
OFFSET = 0.012       # how far each direction's arrow sits from the link's centre line


def check_target(path):
    """Why `path` cannot receive a picture, in a sentence, or None."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        return f"--draw {path}: name a picture ending in {', '.join(FORMATS)}"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"--draw {path}: the folder {folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"--draw {path}: the folder {folder} is not writable"
    return None


def label(direction):
    text = f"{format_rate(direction.rate)}, {format_time(direction.delay)}"
    if direction.loss:
        text += f", {direction.loss * 100:g}% loss"
    return text


def draw(spec, path):
    """Write the picture of a Spec to `path`; returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    where = positions(d.name for d in spec.datacenters)
    # Screen y grows downwards; the figure's upwards.
    xy = {name: (x, 1 - y) for name, (x, y) in where.items()}
    mid = (sum(x for x, _ in xy.values()) / len(xy), sum(y for _, y in xy.values()) / len(xy))
    crowded = len(spec.datacenters) > 5
    fig, ax = plt.subplots(figsize=(12, 9) if crowded else (9, 6.5))
    for link in spec.wan:
        for src, dst, d in ((link.a, link.b, link.ab), (link.b, link.a, link.ba)):
            (x1, y1), (x2, y2) = xy[src], xy[dst]
            length = math.hypot(x2 - x1, y2 - y1) or 1
            ux, uy = (x2 - x1) / length, (y2 - y1) / length
            nx, ny = uy * OFFSET, -ux * OFFSET        # to the right of the travel
            ax.annotate("", xy=(x2 - ux * 0.05 + nx, y2 - uy * 0.05 + ny),
                        xytext=(x1 + ux * 0.05 + nx, y1 + uy * 0.05 + ny),
                        arrowprops={"arrowstyle": "-|>", "color": "tab:blue" if d.up else "tab:red",
                                    "lw": 1.6, "shrinkA": 0, "shrinkB": 0})
            at = 0.35
            angle = math.degrees(math.atan2(y2 - y1, x2 - x1))
            if angle > 90 or angle < -90:
                angle -= 180 * (1 if angle > 0 else -1)
            ax.text(x1 + (x2 - x1) * at + nx * 2.6, y1 + (y2 - y1) * at + ny * 2.6, label(d),
                    fontsize=7 if crowded else 8, ha="center", va="center", rotation=angle,
                    rotation_mode="anchor",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    for dc in spec.datacenters:
        x, y = xy[dc.name]
        ax.plot(x, y, "o", markersize=24, color="#2f4a73", zorder=3)
        ox, oy = x - mid[0], y - mid[1]
        norm = math.hypot(ox, oy) or 1
        tx, ty = x + ox / norm * 0.07, y + oy / norm * 0.07
        ax.text(tx, ty, f"{dc.name}\n{plural(dc.servers, 'server')}, {plural(dc.workers, 'worker')}",
                ha="center", va="center", fontsize=9, zorder=4)
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_axis_off()
    ax.set_title(f"{spec.name}: WAN links, each direction's rate and one-way delay", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
