"""Changing a topo.yaml document before it is validated: one setting at a
dotted YAML path (`experiment.lr=0.05`, as `testbed run --set` takes it
and recipes' axes set it), or whole sections merged in (the Python API's
`Experiment.with_`).  The result is validated as any topo.yaml is, so an
override can make nothing the validator would refuse."""

import copy

import yaml

from testbed.spec.validate import SpecError


def set_path(doc, dotted, value):
    """Set `value` at the dotted path in `doc` (in place), making the
    mappings on the way where there are none."""
    node = doc
    parts = dotted.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[parts[-1]] = value


def assignment(text):
    """'experiment.lr=0.05' -> ("experiment.lr", 0.05): the value read as
    YAML, so numbers, words, lists and mappings are what they would be in
    the file."""
    path, sep, value = text.partition("=")
    if not sep or not path or any(not part for part in path.split(".")):
        raise SpecError("", f"--set takes PATH=VALUE with a dotted YAML path, like "
                            f"experiment.lr=0.05, not {text!r}")
    try:
        return path, yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        raise SpecError(path, f"{value!r} is not a YAML value") from None


def apply(doc, assignments):
    """A copy of `doc` with every (path, value) set."""
    out = copy.deepcopy(doc)
    if not isinstance(out, dict):
        raise SpecError("", "the file must be a mapping with at least 'datacenters' and 'wan'")
    for path, value in assignments:
        set_path(out, path, copy.deepcopy(value))
    return out


def merge(doc, sections):
    """A copy of `doc` with `sections` merged in: mappings key by key, any
    other value replacing what was there."""
    out = copy.deepcopy(doc)
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
