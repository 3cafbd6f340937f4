"""Where each data center sits in a drawing: on a world map when every DC
is named after a region the presets know, else on a circle in DC order.
Positions are in [0, 1] x [0, 1], y downwards (as on a screen)."""

import math

# (longitude, latitude) of the cities the AWS presets' regions are named after.
REGION_PLACES = {
    "frankfurt": (8.7, 50.1), "ireland": (-6.3, 53.3), "london": (-0.1, 51.5),
    "ohio": (-83.0, 40.0), "oregon": (-119.7, 45.8), "seoul": (127.0, 37.6),
    "singapore": (103.8, 1.35), "sydney": (151.2, -33.9), "tokyo": (139.7, 35.7),
    "virginia": (-77.5, 39.0),
}
MARGIN = 0.1


def circle(names):
    """{name: (x, y)}: evenly on a circle, the first at the top, clockwise."""
    n = len(names)
    out = {}
    for i, name in enumerate(names):
        a = 2 * math.pi * i / max(1, n) - math.pi / 2
        out[name] = (0.5 + 0.4 * math.cos(a), 0.5 + 0.4 * math.sin(a))
    return out


def on_map(names):
    """{name: (x, y)} by longitude and latitude, stretched to fill the box
    (keeping east and north), or None when a name is no known place."""
    if not names or any(n not in REGION_PLACES for n in names):
        return None
    lons = [REGION_PLACES[n][0] for n in names]
    lats = [REGION_PLACES[n][1] for n in names]

    def scale(v, lo, hi):
        return 0.5 if hi == lo else MARGIN + (1 - 2 * MARGIN) * (v - lo) / (hi - lo)

    return {n: (scale(REGION_PLACES[n][0], min(lons), max(lons)),
                1 - scale(REGION_PLACES[n][1], min(lats), max(lats))) for n in names}


def positions(names):
    """{dc: (x, y)} for DC names in their topology order; the same names
    always give the same picture."""
    names = list(names)
    return on_map(names) or circle(names)
