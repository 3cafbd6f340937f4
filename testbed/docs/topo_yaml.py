"""docs/topo-yaml.md: every key of topo.yaml with its type, unit, default,
range and one line of help, drawn from the sections' declarations
(testbed/spec/declare.py) that the validator itself reads."""

from testbed.docs.markdown import anchor, table
from testbed.spec import topology
from testbed.spec.units import RATE_UNITS, SIZE_UNITS, TIME_UNITS

TYPES = {"whole": "whole number", "number": "number", "speed": "relative speed", "time": "time",
         "rate": "rate", "size": "size", "loss": "share", "share": "share", "word": "word",
         "flag": "true or false", "text": "text", "name": "name", "pair": "[DC, DC]",
         "queue": "queue", "plugin": "plug-in", "options": "mapping", "models": "mapping",
         "hosts": "word or list of hosts", "env": "mapping",
         "mapping": "mapping", "list": "list"}
UNITS = {"time": "s", "rate": "bit/s", "size": "bytes", "loss": "fraction", "share": "fraction",
         "queue": "frames, bytes or BDPs", "models": "MB"}
# A file that uses most keys, with a word on each; tests/unit/test_schema.py
# checks that the validator and the schema take it.
EXAMPLE = """\
name: example
lan: {bw: 1gbit}                      # each host's NIC in a data center, both ways
tcp: {slow_start_after_idle: false}   # the hosts' TCP; unset: the kernel's default (on)
datacenters:
  - {name: virginia, workers: 2, servers: 1, compute: 1.0}
  - {name: frankfurt, workers: 2, compute: [1.0, 0.5]}   # per-worker speed
  - {name: tokyo, workers: 2}
wan:
  - between: [virginia, frankfurt]
    bw: 50mbit                         # rate on the wire (frames with headers)
    delay: 20ms                        # one way
    jitter: 1ms                        # each frame's delay uniform in 19-21 ms (the backends differ on order)
    loss: 0.1%
    queue: 1bdp                        # or 100 (frames) or 256kb; default 1 round-trip BDP
    reverse: {bw: 10mbit}              # b -> a overrides; `forward:` for a -> b
  - preset: aws/Virginia-Tokyo         # measured RTT/2 and bandwidth x preset_bw_scale
preset_bw_scale: 0.05
experiment:
  sync: ssgd                           # bulk-synchronous SGD; fedavg, fedasync, esync, nbsync
  sync_options: {}                     # the scheme's parameters, e.g. {local_steps: 5} for fedavg
  overlay: ps                          # parameter-server star; mlnet, tsengine, netstorm, planner
  overlay_options: {}                  # the overlay's parameters, e.g. {k: 3} for mlnet
  coordination: wan                    # or management: the coordinator on an unshaped network
  server_dc: virginia                  # servers are that DC's `servers:` hosts, keys sharded across them
  workload: train                      # or synthetic: exact parameter shapes, emulated compute
  model: mlp                           # train: mlp, cnn; synthetic: resnet18, resnet50, vgg16, bert-base
  dataset: digits                      # ships with scikit-learn; mnist/cifar10 from data_dir
  partition: iid                       # or noniid (by label)
  batch_size: 32
  lr: 0.1
  compute_time: 100ms                  # synthetic: per iteration at speed 1.0
  # step_time: 40ms                     # train: a step lasts at least this at speed 1.0 (a slower device)
  eval_every: 10
  chunk: 1mib                          # transport chunk size
  dead_after: 5s                       # a silent peer is dead after this
  stop: {accuracy: 0.9, iterations: 400, time: 3min}
  probe: {period: 2500ms, budget: 5%}  # one probe per DC: bandwidth and RTT estimates (also steady_budget)
dynamics:                              # times count from the start of the agents
  - {at: 30s, link: [virginia, tokyo], bw: 5mbit, delay: 80ms}   # both directions
  - {at: 40s, link: [virginia, tokyo], direction: forward, loss: 1%}
  - {at: 50s, link: [virginia, tokyo], down: true}              # then {up: true}
  - {at: 20s, worker: tokyo-w0, speed: 0.3}                     # or dc: tokyo
  - {trace: traces/diurnal.csv, link: [virginia, tokyo], loop: true}
  - {generator: square, link: [virginia, frankfurt], low: 5mbit, high: 20mbit, period: 20s}
  - {generator: random_walk, link: [virginia, frankfurt], low: 5mbit, high: 50mbit, step: 5mbit,
     every: 2s, seed: 1}
  - {generator: step, dc: tokyo, from: 1.0, to: 0.5, at: 30s}
  - {generator: uniform, link: [tokyo, virginia], direction: forward, low: 1mbit, high: 6mbit,
     every: 10s, seed: 2}
"""
# Shipped files to start from, and what each shows.
STARTERS = (("quickstart.yaml", "3 DCs, the one `make run` trains"),
            ("mesh-4dc.yaml", "a partial mesh, routed through an intermediate DC"),
            ("aws-5-region.yaml", "five AWS regions from measured inter-region latency and bandwidth"),
            ("fluctuating.yaml", "the quickstart's WAN alive: a step, a diurnal trace, a slowed worker"),
            ("netstorm-9dc.yaml", "NetStorm's 9-DC, 13-link WAN, scaled 25x down"),
            ("netstorm-9dc-dynamic.yaml", "the same, every link direction redrawn every 10 s"),
            ("nbsync-4dc.yaml", "compute speeds spread 1x-8x over a slow WAN"),
            ("hpsearch.yaml", "a hyper-parameter search with coflow scheduling"))
# How the file itself says a check of it is run; tests/unit/test_schema.py runs this block.
CHECK_EXAMPLE = """\
testbed schema > topo.schema.json
check-jsonschema --schemafile topo.schema.json topologies/quickstart.yaml
"""


def _yaml(value):
    """A default as topo.yaml writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return repr(value)
    return str(value) if value != "" else '""'


def _type(key, sections):
    if key.kind == "mapping":
        text = f"[mapping](#{anchor(_heading(key.section))})" if key.section in sections else "mapping"
    elif key.kind == "list":
        text = "list of " + (f"[mappings](#{anchor(_heading(key.item.section))})"
                             if key.item.kind == "mapping" else _type(key.item, sections) + "s")
    else:
        text = TYPES[key.kind]
    if key.alt is not None:
        text += " or " + ("true" if key.alt.kind == "const" else _type(key.alt, sections))
    return text


def _number(x):
    return str(x) if isinstance(x, int) else f"{x:g}"


def _span(low, high, above=False, suffix=""):
    if low is None and high is None:
        return "any"
    low = _number(low)
    if high is None:
        return f"above {low}{suffix}" if above else f"{low}{suffix} or more"
    if above:
        return f"above {low}, at most {_number(high)}{suffix}"
    return f"{low}..{_number(high)}{suffix}"


def _range(key):
    """The values a key takes, in words."""
    kind = key.kind
    if kind in ("whole", "number", "speed"):
        text = _span(key.low, key.high, key.above)
    elif kind == "time":
        text = _span(0, key.high, key.above, "s")
    elif kind == "rate":
        text = "above 0"
    elif kind == "size":
        text = f"{key.low}..{key.high}" if key.low else "any"
    elif kind == "loss":
        text = "0% up to, not at, 100%"
    elif kind == "share":
        text = f"above {key.low * 100:g}%, at most {key.high * 100:g}%"
    elif kind in ("word", "const"):
        text = ", ".join(f"`{_yaml(c)}`" for c in key.choices)
    elif kind == "name":
        text = "1-15 of a-z, 0-9 and -, a letter first"
    elif kind == "pair":
        text = "two data centers' names"
    elif kind == "queue":
        low, high = topology.QUEUE_FRAMES
        text = (f"{low}..{high} frames; above 0, at most {topology.MAX_QUEUE_BDPS}bdp; "
                f"{low} frames..1gib")
    elif kind == "plugin":
        text = ", ".join(f"`{n}`" for n in sorted(key.registry.builtins)) + \
            " ([systems](systems.md)), or `module:Class`"
    elif kind == "options":
        text = "the plug-in's ([systems](systems.md))"
    elif kind == "models":
        text = "names to sizes above 0"
    elif kind == "hosts":
        text = "`workers`, `servers`, `all`, a data center, or host names"
    elif kind == "env":
        text = "names to strings or numbers"
    elif kind == "list":
        text = _range(key.item) if key.item.kind != "mapping" else ""
        if key.length:
            fewest, most = key.length
            count = f"{fewest}" if fewest == most else f"{fewest} or more" if most is None \
                else f"{fewest}..{most}"
            text = f"{count} items" + (f", each {text}" if text else "")
    else:
        text = ""
    alt = key.alt
    if alt is not None and alt.kind != "const" and not (alt.kind == "list" and alt.item.kind == kind):
        text = f"{text}; or {_range(alt)}" if text else _range(alt)
    return text


def _default(key):
    if key.default_text is not None:
        return key.default_text
    if key.required:
        return "required"
    if key.kind == "mapping":
        return "its keys' defaults"
    if key.default is None:
        return "unset"
    return f"`{_yaml(key.default)}`"


def _heading(section):
    return f"`{section.path}`" if section.path else "The top level"


def section_table(section, sections):
    """One section's keys as a markdown table."""
    return table(["key", "type", "unit", "default", "values", "what it does"],
                 [(f"`{k.name}`", _type(k, sections), UNITS.get(k.kind, ""), _default(k), _range(k), k.help)
                  for k in section])


def _units():
    def listed(units):
        return ", ".join(f"`{u}`" for u in units)
    return [
        f"- a **rate** is bits per second on the wire, written `50mbit` ({listed(RATE_UNITS)});",
        f"- a **time** is written `40ms` ({listed(TIME_UNITS)}); a bare `0` is none;",
        f"- a **size** is bytes, written `64kib` ({listed(SIZE_UNITS)}) or as a number of bytes;",
        "- a **share** (a loss, a probe's budget) is written `1%` or as a fraction, `0.01`;",
        "- a **relative speed** is a worker's compute speed against the reference worker's (1.0);",
        "- a **name** becomes part of interface and host names: 1-15 characters of a-z, 0-9 and `-`, "
        "starting with a letter.",
    ]


def topo_yaml_page():
    """docs/topo-yaml.md."""
    sections = topology.SECTIONS
    out = ["# topo.yaml reference", "",
           "Every key a topology file takes, section by section.  Drawn by `python -m testbed.docs` "
           "from the declarations the validator reads (`testbed/spec/`), so the two cannot "
           "disagree; do not edit by hand.  [concepts](concepts.md) explains what the settings "
           "mean; `topologies/` has files to start from.", "",
           "A file needs `datacenters` and `wan`; it runs one `experiment` or one `search`; "
           "`dynamics` changes the WAN while it runs.  Quantities carry their units:", "",
           *_units(), "",
           "## An example", "",
           "Each key is in the tables below; `#` comments say what it does.", "",
           "```yaml", EXAMPLE.rstrip(), "```", "",
           "Files to start from, in `topologies/`:", "",
           *[f"- [`{name}`](../topologies/{name}): {what}" for name, what in STARTERS], "",
           "## Checking a file", "",
           "`testbed validate FILE` checks everything, the file as a whole included (a link's ends "
           "exist, the WAN is connected, a scheme fits its overlay); a mistake is one line naming "
           "its YAML path, e.g. `wan[2].bw: '50 mbps' is not a rate like 50mbit`, and exit code 2.",
           "",
           "`testbed schema` prints a JSON Schema (draft 2020-12) of the same keys, for an editor "
           "or a CI check; it says what a schema can (types, ranges, choices, units, which keys a "
           "mapping takes and needs, each built-in plug-in's options), not what needs the whole "
           "file.  An editor with the YAML language server (VS Code's YAML extension, Neovim, "
           "Emacs' lsp-mode) completes and checks a file that starts with:", "",
           "```yaml",
           "# yaml-language-server: $schema=../docs/topo.schema.json",
           "```", "",
           "(a path relative to the file: `docs/topo.schema.json` is the schema as committed, and "
           "the files in `topologies/` start with this line.)  "
           "From a shell, with [check-jsonschema](https://pypi.org/project/check-jsonschema/) "
           "(installed by `make test`):", "",
           "```sh", CHECK_EXAMPLE.rstrip(), "```", ""]
    for section in sections:
        out += [f"## {_heading(section)}", "", section.help[0].upper() + section.help[1:] + ".", "",
                section_table(section, sections)]
    return "\n".join(out).rstrip() + "\n"
