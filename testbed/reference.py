"""Reference pages drawn from the code's own declarations, so they cannot
drift: every plug-in kind's built-ins with their options.

    python -m testbed.reference          # rewrites the pages under docs/
    python -m testbed.reference --check  # exit 1 if a page is stale

A test fails when a committed page differs from what this draws.
"""

import argparse
import os
import sys

from agents.coflow.policies import COFLOW
from agents.metrics import METRIC
from agents.models import DATASET, MODEL
from agents.overlay import OVERLAY
from agents.sync import SYNC
from agents.workload import WORKLOAD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = (  # (registry, heading, where topo.yaml names one, where its options go)
    (SYNC, "Sync schemes", "experiment.sync", "experiment.sync_options"),
    (OVERLAY, "Overlays", "experiment.overlay", "experiment.overlay_options"),
    (COFLOW, "Coflow policies", "search.policy", "search.policy_options"),
    (WORKLOAD, "Workloads", "experiment.workload", None),
    (MODEL, "Models", "experiment.model", "experiment.model_options"),
    (DATASET, "Datasets", "experiment.dataset", "experiment.dataset_options"),
    (METRIC, "Metrics", "experiment.metrics (a list)", None),
)


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def option_table(options):
    """A markdown table of declared Options."""
    if not options:
        return "No options.\n"
    rows = ["| option | default | values | what it does |", "|---|---|---|---|"]
    for o in options:
        default = "unset" if o.default is None else f"`{o.default}`"
        rows.append(f"| `{o.name}` | {default} | {_cell(o.values())} | {_cell(o.help)} |")
    return "\n".join(rows) + "\n"


def systems_page():
    """docs/systems.md: every built-in of every plug-in kind and its options."""
    out = ["# Systems and their options", "",
           "Every built-in sync scheme, overlay, coflow policy, workload, model, dataset and metric, "
           "with the options topo.yaml may set.  Drawn from the registries by "
           "`python -m testbed.reference`; do not edit by hand.  Your own plug-ins are named "
           "the same way (see [extending](extending.md)).", ""]
    for registry, heading, named, options_at in KINDS:
        out += [f"## {heading}", "", f"Named in `{named}`" +
                (f"; options in `{options_at}`." if options_at else "."), ""]
        for name, cls in registry.builtin_classes().items():
            extra = []
            if getattr(cls, "NEEDS", None):
                extra.append("needs " + ", ".join(sorted(cls.NEEDS)))
            if getattr(cls, "PROVIDES", None):
                extra.append("provides " + ", ".join(sorted(cls.PROVIDES)))
            if registry is MODEL:
                extra.append("trainable" if cls().trainable else "shapes only")
            aliases = [old for old, (new, _) in registry.aliases.items() if new == name]
            if aliases:
                extra.append("formerly " + ", ".join(f"`{a}`" for a in aliases))
            out += [f"### `{name}`", "", cls.DESCRIPTION + (f" ({'; '.join(extra)})" if extra else ""),
                    "", option_table(cls.OPTIONS)]
    return "\n".join(out).rstrip() + "\n"


PAGES = {"docs/systems.md": systems_page}


def stale():
    """[path] of the pages whose committed text differs from what is drawn."""
    out = []
    for rel, draw in PAGES.items():
        path = os.path.join(ROOT, rel)
        current = open(path).read() if os.path.exists(path) else None
        if current != draw():
            out.append(rel)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m testbed.reference", description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if a page is stale, writing nothing")
    args = p.parse_args(argv)
    if args.check:
        bad = stale()
        for rel in bad:
            print(f"stale: {rel} (run python -m testbed.reference)", file=sys.stderr)
        return 1 if bad else 0
    for rel, draw in PAGES.items():
        path = os.path.join(ROOT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(draw())
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
