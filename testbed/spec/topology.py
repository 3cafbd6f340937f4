"""topo.yaml -> a validated, frozen Spec.

Units are resolved here, once: the rest of the testbed sees bit/s, seconds,
bytes and fractions.  Every mistake a user can make is a SpecError whose
text names the YAML path (``wan[2].bw: '50 mbps' is not a rate like 50mbit``,
checked with validate.py); nothing outside is touched before the Spec is whole.
"""

import os
import re
from dataclasses import dataclass, field, replace

import yaml

from testbed.spec import dynamics as dynamics_section
from testbed.spec import experiment as experiment_section
from testbed.spec import presets
from testbed.spec import search as search_section
from testbed.spec import validate as check
from testbed.spec.declare import Key, Section
from testbed.spec.experiment import UNKEYED_AT_DEFAULT
from testbed.spec.overrides import apply
from testbed.spec.textfile import TextFileError, read_small_text
from testbed.spec.units import UnitError, format_rate, format_time, parse_size, shown
from testbed.spec.validate import MAX_DELAY, MAX_QUEUE_BYTES, MAX_RATE, SpecError, path_of

NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,14}")
MAX_FILE_BYTES = 1 << 20
# Bounds the walk over the loaded document: an alias bomb shares one object
# many times over, so it blows past this long before memory does.
MAX_NODES = 100_000
MAX_DCS = 32
MAX_HOSTS_PER_DC = 32
DEFAULT_PRESET_BW_SCALE = 0.05
FRAME_BYTES = 1514
MIN_QUEUE_PACKETS = 32
# A queue given in frames, in round-trip BDPs, or in bytes (at least two frames).
QUEUE_FRAMES = (2, 100_000)
MAX_QUEUE_BDPS = 100


@dataclass(frozen=True)
class Direction:
    """One direction of a WAN link, as shaped at its sender's egress."""
    rate: float              # bit/s on the wire
    delay: float             # one-way, seconds
    jitter: float = 0.0      # seconds, uniform +-
    loss: float = 0.0        # fraction of frames dropped
    queue: int = 0           # bytes the bottleneck queue holds
    queue_bdp: float = 1.0   # queue in round-trip BDPs (0: a fixed size)
    up: bool = True          # a link cut down drops every frame

    @property
    def effective_loss(self):
        return self.loss if self.up else 1.0

    def changed(self, rate=None, delay=None, jitter=None, loss=None, up=None):
        """This direction after a live change; a BDP-sized queue follows
        the new rate and delay, a fixed one stays."""
        new = replace(self, **{k: v for k, v in (("rate", rate), ("delay", delay),
                                                 ("jitter", jitter), ("loss", loss), ("up", up))
                               if v is not None})
        if new.queue_bdp and 0 < new.rate <= MAX_RATE and 0 <= new.delay <= MAX_DELAY:
            new = replace(new, queue=queue_bytes(new.rate, new.delay, new.queue_bdp))
        problem = new.problem()
        if problem:
            raise ValueError(problem)
        return new

    def problem(self):
        """Why a link cannot be set to this direction, in one sentence (the
        bounds topo.yaml holds a link to), or None."""
        if not 0 < self.rate <= MAX_RATE:
            return f"a rate must be above zero and at most {format_rate(MAX_RATE)}, " \
                   f"not {format_rate(self.rate)}"
        if not 0 <= self.delay <= MAX_DELAY:
            return f"a delay must be between 0 and {MAX_DELAY:g}s, not {format_time(self.delay)}"
        if not 0 <= self.jitter <= self.delay:
            return f"jitter {format_time(self.jitter)} must be at least zero and at most " \
                   f"the delay, {format_time(self.delay)}"
        if not 0 <= self.loss < 1:
            return f"loss must be at least 0% and below 100%, not {self.loss * 100:g}%"
        if self.queue > MAX_QUEUE_BYTES:
            held = f"{self.queue_bdp:g} round-trip BDP at {format_rate(self.rate)} and " \
                   f"{format_time(self.delay)}" if self.queue_bdp else "the queue"
            return f"{held} is {self.queue} bytes, over the 1gib a queue may hold"
        return None


@dataclass(frozen=True)
class WanLink:
    a: str
    b: str
    ab: Direction
    ba: Direction
    preset: str = ""

    @property
    def name(self):
        return f"{self.a}-{self.b}"

    def direction(self, src, dst):
        if (src, dst) == (self.a, self.b):
            return self.ab
        if (src, dst) == (self.b, self.a):
            return self.ba
        raise KeyError(f"{src}->{dst} is not a direction of link {self.name}")


@dataclass(frozen=True)
class DataCenter:
    name: str
    workers: int
    servers: int = 0
    compute: tuple = ()      # relative speed per worker, 1.0 = reference

    @property
    def hosts(self):
        return ([f"{self.name}-s{i}" for i in range(self.servers)]
                + [f"{self.name}-w{i}" for i in range(self.workers)])


@dataclass(frozen=True)
class Lan:
    rate: float = 1e9
    delay: float = 0.0


# How the routers choose paths: least delay (each link costs its round trip),
# or widest (each direction costs 1 / its rate, as OSPF's default costs do).
ROUTING = ("delay", "bandwidth")


@dataclass(frozen=True)
class Tcp:
    """The emulated hosts' TCP settings; None leaves a setting as the
    kernel has it in a new namespace."""
    slow_start_after_idle: object = None     # True or False: net.ipv4.tcp_slow_start_after_idle


@dataclass(frozen=True)
class Spec:
    name: str
    datacenters: tuple
    wan: tuple
    lan: Lan = Lan()
    tcp: Tcp = Tcp()
    experiment: object = None    # testbed.spec.experiment.Experiment, when the file has one
    search: object = None        # testbed.spec.search.SearchSpec, when the file has one instead
    dynamics: tuple = ()         # testbed.spec.dynamics.Schedule
    source: str = ""
    routing: str = field(default="delay", metadata={UNKEYED_AT_DEFAULT: True})   # ROUTING

    def dc(self, name):
        for d in self.datacenters:
            if d.name == name:
                return d
        raise KeyError(name)

    def link(self, a, b):
        for link in self.wan:
            if {link.a, link.b} == {a, b}:
                return link
        raise KeyError(f"no WAN link between {a} and {b}")


# ---------------------------------------------------------------- declarations

LINK_SETTINGS = (
    Key("bw", "rate", "rate on the wire (frames with headers), each direction",
        default_text="the preset's; required without one"),
    Key("delay", "time", "one-way delay", default=0, high=MAX_DELAY, default_text="`0`, or the preset's"),
    Key("jitter", "time", "each frame's delay is uniform in delay +- jitter; at most the delay",
        default=0, high=MAX_DELAY),
    Key("loss", "loss", "share of frames dropped", default=0),
    Key("queue", "queue", "the bottleneck queue: frames (`100`), bytes (`256kb`) or round-trip "
                          "bandwidth-delay products (`2bdp`), at least a few dozen frames",
        default="1bdp"),
)
DIRECTION = Section("wan[].forward, wan[].reverse", "one direction's own settings, over the link's",
                    [Key(k.name, k.kind, k.help, low=k.low, high=k.high, default_text="the link's")
                     for k in LINK_SETTINGS])
LINK = Section("wan[]", "one WAN link: two data centers, shaped at each sender's egress", [
    Key("between", "pair", "the two data centers it joins",
        default_text="the preset's regions; required without one"),
    Key("preset", "text", "a measured AWS region pair (`aws/Virginia-Tokyo`): RTT/2 as the delay, "
                          "its bandwidth x preset_bw_scale as the rate", what="a preset like "
                                                                               "aws/Virginia-Frankfurt"),
    *LINK_SETTINGS,
    Key("forward", "mapping", "the first DC to the second: overrides", section=DIRECTION),
    Key("reverse", "mapping", "the second DC to the first: overrides", section=DIRECTION),
])
DATACENTER = Section("datacenters[]", "one data center: a switch, a router and its hosts", [
    Key("name", "name", "the DC's name; its hosts are NAME-s0.. and NAME-w0..", required=True),
    Key("workers", "whole", "worker hosts", default=0, low=0, high=MAX_HOSTS_PER_DC),
    Key("servers", "whole", "server hosts (parameter servers and relays)", default=0, low=0,
        high=MAX_HOSTS_PER_DC),
    Key("compute", "speed", "each worker's relative compute speed (1.0: the reference); a list "
                            "gives one per worker; at most 1 when the workload trains for real",
        default=1.0, low=0, high=dynamics_section.MAX_SPEED, above=True,
        alt=Key("", "list", "", item=Key("", "speed", "", low=0, high=dynamics_section.MAX_SPEED,
                                         above=True))),
])
LAN = Section("lan", "every host's link to its DC's switch", [
    Key("bw", "rate", "each host's NIC, both ways", default="1gbit"),
    Key("delay", "time", "one-way delay of a host's link", default=0, high=1.0),
])
TCP = Section("tcp", "the emulated hosts' TCP, each in its own namespace (the machine's is left "
                     "as found)", [
    Key("slow_start_after_idle", "flag", "false keeps a connection's window across an idle "
                                         "retransmission timeout", default_text="the kernel's (true)"),
])
TOP = Section("", "the top of the file", [
    Key("name", "name", "the setting's name, in run folders and the network's tag",
        default_text="the file's name, where that is a valid name; else `topo`"),
    Key("description", "text", "a line saying what the setting is for; the testbed does not read it"),
    Key("datacenters", "list", "the data centers", required=True, length=(2, MAX_DCS),
        item=Key("", "mapping", "", section=DATACENTER)),
    Key("wan", "list", "the WAN links; every DC must be reachable", required=True, length=(1, None),
        item=Key("", "mapping", "", section=LINK)),
    Key("lan", "mapping", "the hosts' links inside a DC", section=LAN),
    Key("tcp", "mapping", "the hosts' TCP settings", section=TCP),
    Key("preset_bw_scale", "number", "scales the rate of every link taken from a preset",
        default=DEFAULT_PRESET_BW_SCALE, low=0, high=1, above=True),
    Key("routing", "word", "how routers choose paths: least delay (each link costs its round trip), "
                           "or the widest (each direction costs 1 / its rate, as OSPF's do)",
        default="delay", choices=ROUTING),
    Key("experiment", "mapping", "one experiment: what trains and how it synchronizes "
                                 "(not with search)", section=experiment_section.EXPERIMENT,
        default_text="none"),
    Key("search", "mapping", "a hyper-parameter search instead of one experiment",
        section=search_section.SEARCH, default_text="none"),
    Key("dynamics", "list", "timed link and speed changes, traces and generators",
        default=[], item=Key("", "mapping", "", section=dynamics_section.ENTRY)),
])
# The keys a topology file may have at its top (recipes set dotted paths under them).
TOP_KEYS = TOP.names
LINK_KEYS = {k.name for k in LINK_SETTINGS}
SECTIONS = (TOP, DATACENTER, LINK, DIRECTION, LAN, TCP, *experiment_section.SECTIONS,
            *search_section.SECTIONS, dynamics_section.ENTRY)


# ---------------------------------------------------------------- reading


def load(path, overrides=()):
    """Read and validate a topo.yaml file, with `overrides` ([(dotted path,
    value)], spec/overrides.py) set first; raises SpecError."""
    try:
        text = read_small_text(path, "the topology file", MAX_FILE_BYTES)
    except TextFileError as e:
        raise SpecError("", str(e)) from None
    stem = os.path.splitext(os.path.basename(path))[0]
    doc = parse_text(text)
    if overrides:
        doc = apply(doc, overrides)
    return from_document(doc, source=os.path.abspath(path), default_name=stem)


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """A safe loader that refuses a key given twice in one mapping (plain
    YAML keeps the last silently, hiding a mistake)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"a key must be a plain word, not a {type(key).__name__}",
                    key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 lambda loader, node: loader.construct_mapping(node))


def loads(text, source="", default_name="topo"):
    return from_document(parse_text(text), source, default_name)


def parse_text(text):
    """topo.yaml's text -> its document (plain mappings and lists), not yet
    validated; SpecError when it is not YAML."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise SpecError("", f"not valid YAML: {where}{problem}") from None


def from_document(doc, source="", default_name="topo"):
    """A topo.yaml document (as parse_text gives it, or built in Python)
    -> a validated Spec; `source` is the file it stands for (plug-ins and
    traces named by a path are found beside it)."""
    _check_size(doc)
    if not isinstance(doc, dict):
        raise SpecError("", "the file must be a mapping with at least 'datacenters' and 'wan'")
    with SpecError.at("", "the layout of topologies/quickstart.yaml"):
        return _build(doc, source, default_name)


def _check_size(doc):
    seen = 0
    stack = [doc]
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise SpecError("", f"the document expands to more than {MAX_NODES} values "
                                "(a YAML alias bomb?)")
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _name(value, path):
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise SpecError(path, f"{shown(value)} is not a valid name: use 1-15 characters "
                              "of a-z, 0-9 and '-', starting with a letter")
    return value


def _build(doc, source, default_name):
    TOP.check_keys(doc, "")
    name = doc.get("name", default_name if NAME_RE.fullmatch(default_name or "") else "topo")
    name = _name(name, "name")
    if "description" in doc:
        TOP.read(doc, "description", "")
    if "datacenters" not in doc:
        raise SpecError("datacenters", "missing: list the data centers")
    dcs = _datacenters(doc["datacenters"])
    if "wan" not in doc:
        raise SpecError("wan", "missing: list the WAN links between data centers")
    with SpecError.at("lan", "a mapping of bw, delay"):
        lan = _lan(doc.get("lan", {}))
    with SpecError.at("tcp", "a mapping of slow_start_after_idle"):
        tcp = _tcp(doc.get("tcp", {}))
    scale = TOP.read(doc, "preset_bw_scale", "")
    wan = _wan(doc["wan"], {d.name for d in dcs}, scale)
    _check_connected(dcs, wan)
    experiment = None
    if "experiment" in doc:
        with SpecError.at("experiment", "a mapping of sync, overlay, workload, stop, ..."):
            check.mapping(doc["experiment"], "experiment", "sync, overlay, workload, stop, ...")
            experiment = experiment_section.parse(doc["experiment"], dcs,
                                                  base_dir=os.path.dirname(source) if source else None)
    search = None
    if "search" in doc:
        if experiment is not None:
            raise SpecError("search", "a file runs one experiment or one search, not both")
        with SpecError.at("search", "a mapping of policy, tasks, configs, ..."):
            check.mapping(doc["search"], "search", "policy, tasks, configs, ...")
            search = search_section.parse(doc["search"], dcs)
    max_speed = dynamics_section.MAX_SPEED
    if experiment is not None and experiment.workload == "train":
        max_speed = 1.0
        _check_train_speeds(doc["datacenters"], dcs)
    with SpecError.at("dynamics", "a list of timed changes"):
        dynamics = check.sequence(doc.get("dynamics", []), "dynamics", "timed link and speed changes")
        dynamics = dynamics_section.parse(
            dynamics, {(link.a, link.b) for link in wan},
            {d.name: [h for h in d.hosts if h.rsplit("-", 1)[1].startswith("w")] for d in dcs},
            os.path.dirname(source) if source else os.getcwd(), max_speed=max_speed)
    if experiment is not None:
        for i, schedule in enumerate(dynamics):
            n = schedule.count(experiment.max_time)
            if n > dynamics_section.MAX_ACTIONS:
                raise SpecError(path_of("dynamics", i), f"makes {n} changes in the run's "
                                f"{experiment.max_time:g}s; at most {dynamics_section.MAX_ACTIONS}: "
                                "space them further apart")
    routing = TOP.read(doc, "routing", "")
    return Spec(name=name, datacenters=tuple(dcs), wan=tuple(wan), lan=lan, tcp=tcp,
                experiment=experiment, search=search,
                dynamics=dynamics, source=source, routing=routing)


def _datacenters(value):
    items = check.sequence(value, "datacenters", "one entry per data center")
    if not items:
        raise SpecError("datacenters", "is empty: a WAN needs at least two data centers")
    if len(items) > MAX_DCS:
        raise SpecError("datacenters", f"{len(items)} data centers; at most {MAX_DCS}")
    dcs, seen = [], {}
    for i, item in enumerate(items):
        path = path_of("datacenters", i)
        with SpecError.at(path, "a mapping of name, workers, servers, compute"):
            dcs.append(_datacenter(item, path, i, seen))
    if len(dcs) < 2:
        raise SpecError("datacenters", "a WAN needs at least two data centers")
    return dcs


def _datacenter(item, path, i, seen):
    """One entry of datacenters; `seen` maps names to their index so far."""
    check.mapping(item, path, "name, workers, servers, compute")
    DATACENTER.check_keys(item, path)
    if "name" not in item:
        raise SpecError(path_of(path, "name"), "missing")
    name = _name(item["name"], path_of(path, "name"))
    if name in seen:
        raise SpecError(path_of(path, "name"), f"'{name}' is already datacenters[{seen[name]}]")
    seen[name] = i
    workers = DATACENTER.read(item, "workers", path)
    servers = DATACENTER.read(item, "servers", path)
    if workers + servers > MAX_HOSTS_PER_DC:
        raise SpecError(path, f"{workers + servers} hosts; at most {MAX_HOSTS_PER_DC} per data center")
    compute = _compute(item.get("compute", DATACENTER["compute"].default), path_of(path, "compute"), workers)
    return DataCenter(name=name, workers=workers, servers=servers, compute=compute)


def _compute(value, path, workers):
    """One relative speed per worker: a list of them, or one for all."""
    if not isinstance(value, list):
        return tuple(dynamics_section.speed(value, path) for _ in range(workers))
    if len(value) != workers:
        raise SpecError(path, f"has {len(value)} speeds for {workers} workers")
    return tuple(dynamics_section.speed(v, path_of(path, i)) for i, v in enumerate(value))


def _check_train_speeds(raw, dcs):
    """Real training runs as fast as this machine allows; the worker can only
    stretch it, so a speed above 1 would be accepted and then ignored."""
    for i, (item, dc) in enumerate(zip(raw, dcs)):
        for j, speed in enumerate(dc.compute):
            if speed > 1.0:
                where = path_of(path_of("datacenters", i), "compute")
                if isinstance(item.get("compute"), list):
                    where = path_of(where, j)
                raise SpecError(where, f"{speed:g}: {dynamics_section.TRAIN_SPEED_LIMIT}")


def _lan(value):
    check.mapping(value, "lan", "bw, delay")
    LAN.check_keys(value, "lan")
    return Lan(rate=LAN.read(value, "bw", "lan"), delay=LAN.read(value, "delay", "lan"))


def _tcp(value):
    check.mapping(value, "tcp", "slow_start_after_idle")
    TCP.check_keys(value, "tcp")
    restart = value.get("slow_start_after_idle")
    if restart is not None:
        TCP["slow_start_after_idle"].check(restart, "tcp.slow_start_after_idle")
    return Tcp(slow_start_after_idle=restart)


def _wan(value, dc_names, scale):
    items = check.sequence(value, "wan", "one entry per link")
    links, seen = [], {}
    for i, item in enumerate(items):
        path = path_of("wan", i)
        with SpecError.at(path, "a mapping of between, bw, delay, ..."):
            links.append(_link(item, path, i, seen, dc_names, scale))
    if not links:
        raise SpecError("wan", "is empty: join the data centers with at least one link")
    return links


def _link(item, path, i, seen, dc_names, scale):
    """One entry of wan; `seen` maps the pairs joined so far to their index."""
    check.mapping(item, path, "between, bw, delay, ...")
    LINK.check_keys(item, path)
    base = {}
    preset_name = ""
    if "preset" in item:
        preset_name = LINK.read(item, "preset", path)
        try:
            ra, rb, rtt, rate = presets.lookup(str(preset_name))
        except presets.PresetError as e:
            raise SpecError(path_of(path, "preset"), str(e)) from None
        base = {"between": [ra.lower(), rb.lower()], "delay": rtt / 2, "bw": rate * scale}
    a, b = _between(item.get("between", base.get("between")), path_of(path, "between"), dc_names)
    key = frozenset((a, b))
    if key in seen:
        raise SpecError(path_of(path, "between"), f"{a} and {b} are already joined by wan[{seen[key]}]")
    seen[key] = i
    common = {k: item[k] for k in LINK_KEYS if k in item}
    for direction in ("forward", "reverse"):
        if direction in item:
            dpath = path_of(path, direction)
            check.mapping(item[direction], dpath, "bw, delay, jitter, loss, queue")
            DIRECTION.check_keys(item[direction], dpath)
    ab = _direction(base, common, item.get("forward", {}), path, "forward")
    ba = _direction(base, common, item.get("reverse", {}), path, "reverse")
    return WanLink(a=a, b=b, ab=ab, ba=ba, preset=preset_name)


def _between(value, path, dc_names):
    if value is None:
        raise SpecError(path, "missing: name the two data centers, e.g. between: [a, b]")
    if not isinstance(value, list) or len(value) != 2:
        raise SpecError(path, f"{value!r} must name exactly two data centers, e.g. [a, b]")
    for j, end in enumerate(value):
        check.word(end, path_of(path, j), sorted(dc_names), "data center")
    if value[0] == value[1]:
        raise SpecError(path, f"a link must join two different data centers, not {value[0]} to itself")
    return value[0], value[1]


def _direction(base, common, override, path, which):
    """Resolve one direction: override > link-wide value > preset value."""
    def pick(key):
        if key in override:
            return override[key], path_of(path_of(path, which), key)
        if key in common:
            return common[key], path_of(path, key)
        return None, None

    raw, p = pick("bw")
    if raw is not None:
        rate = LINK["bw"].check(raw, p)
    elif "bw" in base:
        rate = base["bw"]
    else:
        raise SpecError(path_of(path, "bw"), "missing: give the link's rate, e.g. bw: 50mbit")
    raw, p = pick("delay")
    delay = LINK["delay"].check(raw, p) if raw is not None else base.get("delay", 0.0)
    raw, p = pick("jitter")
    jitter = LINK["jitter"].check(raw if raw is not None else LINK["jitter"].default, p)
    if jitter > delay:
        raise SpecError(p, f"jitter {jitter * 1e3:g}ms is larger than the delay {delay * 1e3:g}ms")
    raw, p = pick("loss")
    loss = LINK["loss"].check(raw if raw is not None else LINK["loss"].default, p)
    raw, p = pick("queue")
    bdps, fixed = _queue(raw if raw is not None else LINK["queue"].default, p)
    queue = queue_bytes(rate, delay, bdps) if bdps else fixed
    direction = Direction(rate=rate, delay=delay, jitter=jitter, loss=loss, queue=queue, queue_bdp=bdps)
    problem = direction.problem()
    if problem:
        raise SpecError(path_of(path, which) if override else path, problem)
    return direction


def queue_bytes(rate, delay, bdps):
    """`bdps` round-trip bandwidth-delay products in bytes, at least a few
    dozen frames so that short-delay links still absorb a burst."""
    bdp = rate / 8 * (2 * delay) * bdps
    return int(max(bdp, MIN_QUEUE_PACKETS * FRAME_BYTES))


def _queue(value, path):
    """queue: 100 (frames), 256kb (bytes) or 2bdp (round-trip BDPs) ->
    (bdps, 0) or (0, bytes)."""
    if isinstance(value, int) and not isinstance(value, bool):
        low, high = QUEUE_FRAMES
        if not low <= value <= high:
            raise SpecError(path, f"{value} frames is out of range {low}..{high}")
        return 0.0, value * FRAME_BYTES
    if isinstance(value, str) and re.fullmatch(r"(\d+(\.\d*)?|\.\d+)bdp", value.strip()):
        bdps = float(value.strip()[:-3])
        if not 0 < bdps <= MAX_QUEUE_BDPS:
            raise SpecError(path, f"{value!r}: between 0 and {MAX_QUEUE_BDPS} bdp")
        return bdps, 0
    try:
        size = parse_size(value)
    except UnitError:
        raise SpecError(path, f"{value!r} is not a queue like 100 (frames), 256kb or 2bdp") from None
    if size < QUEUE_FRAMES[0] * FRAME_BYTES:
        raise SpecError(path, f"{value!r} holds less than two frames")
    if size > MAX_QUEUE_BYTES:
        raise SpecError(path, f"{value!r} is over 1gib; no WAN queue holds that much")
    return 0.0, size


def _check_connected(dcs, wan):
    adjacent = {d.name: set() for d in dcs}
    for link in wan:
        adjacent[link.a].add(link.b)
        adjacent[link.b].add(link.a)
    start = dcs[0].name
    reached, frontier = {start}, [start]
    while frontier:
        for nxt in adjacent[frontier.pop()] - reached:
            reached.add(nxt)
            frontier.append(nxt)
    cut = [d.name for d in dcs if d.name not in reached]
    if cut:
        raise SpecError("wan", f"the WAN is disconnected: {', '.join(cut)} cannot be reached "
                               f"from {start}")
