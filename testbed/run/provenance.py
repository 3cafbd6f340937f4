"""Where each plug-in of a run came from: the run folder's plugins.json
names every plug-in's module, file and a hash of its source, so a result
names exactly the code that made it; and the folders the agents must
find a user's importable plug-ins in, wherever they are started (as root,
through sudo, which drops PYTHONPATH, or on a Ray worker)."""

import os

from agents.coflow.policies import COFLOW
from agents.metrics import METRIC
from agents.models import DATASET, MODEL, flat_size
from agents.overlay import OVERLAY
from agents.sync import SYNC
from agents.workload import WORKLOAD


def named(spec):
    """[(registry, ref)] of every plug-in a Spec runs."""
    if spec.search is not None:
        return [(COFLOW, spec.search.policy)]
    exp = spec.experiment
    if exp.programs:
        return [(WORKLOAD, exp.workload)]
    out = [(SYNC, exp.sync), (OVERLAY, exp.overlay), (WORKLOAD, exp.workload)]
    out.append((MODEL, "flat" if flat_size(exp.model) is not None else exp.model))
    if exp.dataset:
        out.append((DATASET, exp.dataset))
    out += [(METRIC, m) for m in exp.metrics]
    return out


def origins(spec):
    """[Origin] of every plug-in a Spec runs."""
    return [registry.load(ref)[1] for registry, ref in named(spec)]


def import_roots(found):
    """The folders a user's plug-in modules are imported from (the root of
    each module's dotted name), for the agents' PYTHONPATH; built-ins and
    plug-ins named by file need none."""
    roots = []
    for o in found:
        if o.builtin or not o.file or o.module.startswith("geo_testbed_plugin_"):
            continue
        depth = o.module.count(".") + (os.path.basename(o.file) == "__init__.py")
        root = os.path.dirname(o.file)
        for _ in range(depth):
            root = os.path.dirname(root)
        if root not in roots:
            roots.append(root)
    return roots


def plugin_files(spec):
    """{path: source} of the plug-ins a Spec names by file, to ship where
    the file is not (another machine)."""
    exp = spec.experiment
    out = {}
    for _, ref, _ in (exp.plugins if exp is not None else ()):
        path = ref.rpartition(":")[0]
        if path.endswith(".py") and os.path.isabs(path):
            with open(path) as f:
                out[path] = f.read()
    return out


def relocated(spec, moves):
    """The Spec with every plug-in path in `moves` ({old: new}) replaced."""
    import dataclasses
    exp = spec.experiment
    if exp is None or not moves:
        return spec

    def move(ref):
        path, sep, attr = ref.rpartition(":")
        return f"{moves[path]}:{attr}" if sep and path in moves else ref

    fields = {k: move(getattr(exp, k)) for k in ("sync", "overlay", "workload", "model", "dataset")}
    exp = dataclasses.replace(exp, **fields, metrics=tuple(move(m) for m in exp.metrics),
                              plugins=tuple((kind, move(ref), sha) for kind, ref, sha in exp.plugins))
    return dataclasses.replace(spec, experiment=exp)
