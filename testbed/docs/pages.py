"""The pages under docs/ that are drawn from the code's own declarations,
so they cannot drift: the systems (every plug-in kind's built-ins and
options), the topo.yaml reference and its JSON Schema.

    python -m testbed.docs          # rewrites them
    python -m testbed.docs --check  # exit 1 if one is stale, writing nothing

tests/unit/test_reference.py fails when a committed page differs from
what this draws.
"""

import argparse
import json
import os
import sys

from testbed.docs.systems import systems_page
from testbed.docs.topo_yaml import topo_yaml_page
from testbed.spec.schema import schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def schema_page():
    """docs/topo.schema.json, what `testbed schema` prints."""
    return json.dumps(schema(), indent=1) + "\n"


PAGES = {"docs/systems.md": systems_page, "docs/topo-yaml.md": topo_yaml_page,
         "docs/topo.schema.json": schema_page}


def stale(root=ROOT):
    """[path] of the pages whose committed text differs from what is drawn."""
    out = []
    for rel, draw in PAGES.items():
        path = os.path.join(root, rel)
        current = open(path).read() if os.path.exists(path) else None
        if current != draw():
            out.append(rel)
    return out


def write(root=ROOT):
    for rel, draw in PAGES.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(draw())
        yield rel


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m testbed.docs", description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if a page is stale, writing nothing")
    args = p.parse_args(argv)
    if args.check:
        bad = stale()
        for rel in bad:
            print(f"stale: {rel} (run python -m testbed.docs)", file=sys.stderr)
        return 1 if bad else 0
    for rel in write():
        print(f"wrote {rel}")
    return 0
