"""docs/systems.md: every plug-in kind's built-ins with their options,
drawn from the registries (agents/plugins.py)."""

from agents.coflow.policies import COFLOW
from agents.metrics import METRIC
from agents.models import DATASET, MODEL
from agents.overlay import OVERLAY
from agents.sync import SYNC
from agents.workload import WORKLOAD
from testbed.docs.markdown import table

KINDS = (  # (registry, heading, where topo.yaml names one, where its options go)
    (SYNC, "Sync schemes", "experiment.sync", "experiment.sync_options"),
    (OVERLAY, "Overlays", "experiment.overlay", "experiment.overlay_options"),
    (COFLOW, "Coflow policies", "search.policy", "search.policy_options"),
    (WORKLOAD, "Workloads", "experiment.workload", None),
    (MODEL, "Models", "experiment.model", "experiment.model_options"),
    (DATASET, "Datasets", "experiment.dataset", "experiment.dataset_options"),
    (METRIC, "Metrics", "experiment.metrics (a list)", None),
)


def option_table(options):
    """A markdown table of declared Options."""
    if not options:
        return "No options.\n"
    return table(["option", "default", "values", "what it does"],
                 [(f"`{o.name}`", "unset" if o.default is None else f"`{o.default}`", o.values(), o.help)
                  for o in options])


def systems_page():
    """docs/systems.md: every built-in of every plug-in kind and its options."""
    out = ["# Systems and their options", "",
           "Every built-in sync scheme, overlay, coflow policy, workload, model, dataset and metric, "
           "with the options topo.yaml may set.  Drawn from the registries by "
           "`python -m testbed.docs`; do not edit by hand.  Your own plug-ins are named "
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
