"""`python -m agents.overlay.netstorm FILE.json`: NetStorm's routes, trees
and root metric for a WAN graph (see the package docstring)."""

import argparse
import json
import sys

from agents.overlay.netstorm.routes import all_routes, performance, tree_parents


class GraphError(ValueError):
    pass


def read_graph(doc):
    """(speeds {(a, b): bytes/s}, DC order) from a graph document."""
    if not isinstance(doc, dict):
        raise GraphError("the graph file must hold a JSON object")
    if "links_mbit_per_direction" in doc:
        pairs = [(_ends(k, "->"), v) for k, v in _table(doc, "links_mbit_per_direction").items()]
    elif "links_mbit" in doc:
        pairs = []
        for key, v in _table(doc, "links_mbit").items():
            a, b = _ends(key, "-")
            pairs += [((a, b), v), ((b, a), v)]
    else:
        raise GraphError("the graph needs links_mbit or links_mbit_per_direction")
    speeds = {}
    for (a, b), mbit in pairs:
        if isinstance(mbit, bool) or not isinstance(mbit, (int, float)) or not mbit > 0:
            raise GraphError(f"link {a}-{b}: {mbit!r} is not a positive rate in Mbit/s")
        speeds[(a, b)] = mbit * 1e6 / 8
    names = {dc for link in speeds for dc in link}
    order = sorted(names, key=lambda n: (0, int(n), "") if n.isdigit() else (1, 0, n))
    return speeds, order


def _table(doc, key):
    value = doc[key]
    if not isinstance(value, dict) or not value:
        raise GraphError(f"{key} must be a non-empty object of links")
    return value


def _ends(key, sep):
    a, found, b = str(key).partition(sep)
    if not found or not a or not b or a == b:
        raise GraphError(f"{key!r} is not a link like 1{sep}2")
    return a, b


def _label(dc):
    return int(dc) if dc.isdigit() else dc


def describe(speeds, order, multipath=True):
    """The policy in the shape of the authors' reference file; speeds in
    MB/s as their code reports them."""
    mb = {link: s / 1e6 for link, s in speeds.items()}
    routes = all_routes(mb, order, multipath)
    out = {}
    for keep in sorted({len(order), 3, 1}, reverse=True):
        if keep <= len(order):
            perf = performance(routes, mb, order, keep)
            out[f"perf_R{keep}"] = [round(perf[r], 2) for r in order]
    out["tree_parents"] = {str(r): {str(j): _label(p) for j, p in tree_parents(routes, order, r).items()}
                           for r in order}
    first, last = order[0], order[-1]
    out[f"paths_{first}_to_{last}"] = [[_label(dc) for dc in p]
                                       for p in routes.get((first, last), [])]
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m agents.overlay.netstorm",
                                description="NetStorm's routes, trees and root metric for a WAN graph")
    p.add_argument("file", help="a JSON graph with links_mbit or links_mbit_per_direction")
    p.add_argument("--no-multipath", dest="multipath", action="store_false",
                   help="primary paths only")
    args = p.parse_args(argv)
    try:
        with open(args.file) as f:
            doc = json.load(f)
        speeds, order = read_graph(doc)
    except OSError as e:
        print(f"error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as e:
        print(f"error: {args.file} is not JSON (line {e.lineno}, column {e.colno}): it should "
              "hold a graph with links_mbit or links_mbit_per_direction", file=sys.stderr)
        return 2
    except GraphError as e:
        print(f"error: {args.file}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(describe(speeds, order, args.multipath), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
