"""A JSON Schema (draft 2020-12) of topo.yaml, drawn from the sections'
declarations (testbed/spec/declare.py) and the built-in plug-ins' options.

It says what a schema can: each key's type, its range or choices, the
units a quantity is written in, which keys a mapping takes and which it
needs, the shapes of a dynamics entry, and each built-in plug-in's
options.  What needs the whole file (a link's ends are data centers that
exist, jitter within the delay, a connected WAN) only `testbed validate`
checks.  `testbed schema` prints it; an editor reads it from a
`# yaml-language-server: $schema=...` line.
"""

from agents.plugins import Option
from testbed.spec import dynamics, experiment, topology
from testbed.spec.units import RATE_UNITS, SIZE_UNITS, TIME_UNITS, parse_size

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_NUMBER = r"(\d+(\.\d*)?|\.\d+)"


def _any_case(word):
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in word)


def _quantity(units):
    """A number and one of `units`, as units.py reads it (any case, spaces around)."""
    spelled = "|".join(_any_case(u) for u in sorted(units, key=len, reverse=True))
    return {"type": "string", "pattern": rf"^\s*{_NUMBER}({spelled})\s*$"}


RATE = _quantity(RATE_UNITS)
TIME = _quantity(TIME_UNITS)
SIZE_TEXT = _quantity(SIZE_UNITS)
PERCENT = {"type": "string", "pattern": rf"^\s*{_NUMBER}%\s*$"}
BDP = {"type": "string", "pattern": rf"^\s*{_NUMBER}bdp\s*$"}
NAME = {"type": "string", "pattern": f"^{topology.NAME_RE.pattern}$"}


def _bounded(kind, low=None, high=None, above=False):
    out = {"type": kind}
    if low is not None:
        out["exclusiveMinimum" if above else "minimum"] = low
    if high is not None:
        out["maximum"] = high
    return out


def _kind(key):
    """The schema of one key's value, by its kind."""
    kind = key.kind
    if kind == "whole":
        return _bounded("integer", key.low, key.high)
    if kind in ("number", "speed"):
        return _bounded("number", key.low, key.high, key.above)
    if kind == "time":
        return TIME if key.above else {"anyOf": [TIME, {"const": 0}]}
    if kind == "rate":
        return RATE
    if kind == "size":
        low = parse_size(key.low) if key.low is not None else 0
        high = parse_size(key.high) if key.high is not None else None
        return {"anyOf": [_bounded("integer", low, high), SIZE_TEXT]}
    if kind == "loss":
        return {"anyOf": [{"type": "number", "minimum": 0, "exclusiveMaximum": 1}, PERCENT]}
    if kind == "share":
        return {"anyOf": [_bounded("number", key.low, key.high, above=True), PERCENT]}
    if kind in ("word", "const"):
        return {"enum": list(key.choices)}
    if kind == "flag":
        return {"type": "boolean"}
    if kind == "text":
        return {"type": "string"}
    if kind == "name":
        return NAME
    if kind == "pair":
        return {"type": "array", "items": NAME, "minItems": 2, "maxItems": 2}
    if kind == "queue":
        low, high = topology.QUEUE_FRAMES
        return {"anyOf": [_bounded("integer", low, high), BDP, SIZE_TEXT]}
    if kind == "plugin":
        return {"type": "string", "minLength": 1, "examples": sorted(key.registry.builtins)}
    if kind == "options":
        return {"type": ["object", "null"]}
    if kind == "hosts":
        return {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    if kind == "env":
        return {"type": "object", "additionalProperties": {"type": ["string", "number"]}}
    if kind == "models":
        return {"type": "object", "minProperties": 1,
                "additionalProperties": {"type": "number", "exclusiveMinimum": 0}}
    if kind == "mapping":
        return section(key.section)
    if kind == "list":
        out = {"type": "array", "items": value(key.item)}
        if key.length:
            fewest, most = key.length
            out["minItems"] = fewest
            if most is not None:
                out["maxItems"] = most
        return out
    raise TypeError(f"key {key.name}: no schema for a {kind}")


def value(key):
    """The schema of a key's value: its kind, or its second form, with its help."""
    out = _kind(key)
    if key.alt is not None:
        out = {"anyOf": [out, _kind(key.alt)]}
    if key.help:
        out = {"description": key.help, **out}
    if key.default is not None and not isinstance(key.default, dict):
        out["default"] = key.default
    return out


def option(o: Option):
    """The schema of one plug-in option, as Option.check takes it."""
    kind = o.kind
    if kind == "word":
        out = {"enum": list(o.choices)}
    elif kind == "flag":
        out = {"type": "boolean"}
    elif kind in ("whole", "number"):
        out = _bounded("integer" if kind == "whole" else "number", o.low, o.high)
    elif kind == "text":
        out = {"type": "string"}
    else:
        out = {"type": "array"}
        if o.item is not None:
            out["items"] = option(o.item)
    if o.default is None:
        out = {"anyOf": [out, {"type": "null"}]}
    return {"description": o.help, **out} if o.help else out


def _options_rules(sec):
    """For every built-in a plug-in key of `sec` names (and each old name of
    one): its options key takes exactly the options it declares."""
    rules = []
    for key in sec:
        if key.kind != "options":
            continue
        named = next(k for k in sec if k.kind == "plugin" and k.registry is key.registry)
        registry = key.registry
        for name, cls in registry.builtin_classes().items():
            props = {o.name: option(o) for o in cls.OPTIONS}
            names = [name] + [old for old, (new, _) in registry.aliases.items() if new == name]
            condition = {"properties": {named.name: {"enum": names}}}
            if name != named.default:
                condition["required"] = [named.name]
            rules.append({"if": condition, "then": {"properties": {key.name: {
                "anyOf": [{"type": "object", "properties": props, "additionalProperties": False},
                          {"type": "null"}]}}}})
    return rules


def section(sec):
    """The schema of one mapping: its keys, no others, the ones it needs."""
    out = {"type": "object", "description": sec.help,
           "properties": {k.name: value(k) for k in sec}, "additionalProperties": False}
    required = [k.name for k in sec if k.required]
    if required:
        out["required"] = required
    rules = _options_rules(sec) + SECTION_RULES.get(sec.path, [])
    if rules:
        out["allOf"] = rules
    return out


def _link_rules():
    """A link names its ends and its rate, or takes them from a preset (a
    rate given per direction counts)."""
    per_direction = {"required": ["between", "forward", "reverse"], "properties": {
        "forward": {"required": ["bw"]}, "reverse": {"required": ["bw"]}}}
    return [{"anyOf": [{"required": ["preset"]}, {"required": ["between", "bw"]}, per_direction]}]


def _entry_shapes():
    """A dynamics entry is one of these shapes: a change at a time, a
    trace, or a generator; of a link, or of workers' speeds."""
    keys = {k.name: k for k in dynamics.ENTRY}
    speed = _kind(keys["speed"])

    def shape(required, allowed, properties=None, more=None):
        out = {"required": sorted(required), "propertyNames": {"enum": sorted(allowed)}}
        if properties:
            out["properties"] = properties
        if more:
            out.update(more)
        return out

    link, workers = dynamics.TARGET_KEYS["link"], dynamics.TARGET_KEYS["speed"]
    who = {"anyOf": [{"required": ["worker"]}, {"required": ["dc"]}]}
    what = [{"required": [k]} for k in dynamics.LINK_SETTINGS] + \
        [{"required": [k], "properties": {k: {"const": True}}} for k in ("down", "up")]
    shapes = [
        shape({"at", "link"}, {"at"} | link | dynamics.VALUE_KEYS["link"], more={"anyOf": what}),
        shape({"at", "speed"}, {"at"} | workers | {"speed"}, more=who),
        shape({"trace", "link"}, dynamics.ENTRY_KEYS["trace"] | link),
    ]
    for name in dynamics.GENERATORS:
        extra = dynamics.GENERATOR_KEYS[name]
        needed = {"generator"} | (extra - {"seed", "initial", "at"})
        levels = sorted(k for k in extra if keys[k].alt is not None)
        shapes.append(shape(needed | {"link"}, {"generator", "start"} | extra | link,
                            {"generator": {"const": name}, **{k: RATE for k in levels}}))
        shapes.append(shape(needed, {"generator", "start"} | extra | workers,
                            {"generator": {"const": name}, **{k: speed for k in levels}}, more=who))
    return [{"anyOf": shapes}]


def _program_rules():
    """A workload that runs programs of its own needs `programs` and takes
    no sync scheme, overlay or model; any other takes no programs."""
    registry = experiment.EXPERIMENT["workload"].registry
    runs_programs = [n for n, c in registry.builtin_classes().items() if getattr(c, "RUNS_PROGRAMS", False)]
    if not runs_programs:
        return []

    def none_of(keys):
        return {"not": {"anyOf": [{"required": [k]} for k in keys]}}

    return [{"if": {"properties": {"workload": {"enum": runs_programs}}, "required": ["workload"]},
             "then": {"required": ["programs"], **none_of(experiment.NOT_WITH_PROGRAMS)},
             "else": none_of(experiment.PROGRAMS_ONLY)}]


SECTION_RULES = {
    "": [{"not": {"required": ["experiment", "search"]}}],
    "wan[]": _link_rules(),
    "experiment": _program_rules(),
    "dynamics[]": _entry_shapes(),
}


def schema():
    """The JSON Schema of topo.yaml, as a dict."""
    out = {"$schema": DIALECT, "title": "geo-testbed topo.yaml"}
    out.update(section(topology.TOP))
    return out
