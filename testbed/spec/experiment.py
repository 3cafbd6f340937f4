"""The `experiment:` section of topo.yaml -> a validated Experiment.

Picks one value on each axis (sync, overlay), the workload and when to stop.
A combination that makes no sense is refused here with a sentence saying
why, before anything is built.
"""

import logging
import os
import pwd
from dataclasses import dataclass, field

from agents.metrics import METRIC
from agents.models import DATASET, MODEL, flat_size
from agents.optim import OPTIMIZERS, SCHEDULES
from agents.overlay import OVERLAY
from agents.plugins import OptionError, PluginError, check_options, mismatch
from agents.sync import SYNC
from agents.workload import LOSSES, WORKLOAD, Train
from testbed.spec import programs as programs_section
from testbed.spec import validate as check
from testbed.spec.declare import Key, Section
from testbed.spec.units import parse_fraction, shown
from testbed.spec.validate import SpecError

log = logging.getLogger(__name__)

PROBE_PAIRS = ("all", "neighbours")
# Keys only a workload that runs programs of its own takes, and keys it refuses.
PROGRAMS_ONLY = ("programs", "master_port", "user", "workdir")
NOT_WITH_PROGRAMS = ("sync", "overlay", "sync_options", "overlay_options", "model", "dataset",
                     "model_options", "dataset_options", "optimizer", "lr_schedule", "metrics")
# The model when topo.yaml names none: one that trains, or one of shapes only.
TRAIN_MODEL, SYNTHETIC_MODEL = "mlp", "resnet18"

STOP = Section("experiment.stop", "when the run ends: at whichever comes first", [
    Key("iterations", "whole", "iterations", default=200, low=1, high=10**7),
    Key("time", "time", "from the agents' start", default="10min", above=True),
    Key("accuracy", "number", "the test accuracy to reach (0: none; train only)", default=0.0,
        low=0, high=1),
])
PROBE = Section("experiment.probe", "a probe per DC estimates every DC pair's bandwidth and RTT "
                                    "(`probe: true` for the defaults)", [
    Key("period", "time", "between two trains of a pair", default="2500ms", above=True),
    Key("budget", "share", "share of each link direction's capacity for probe bytes", default="5%",
        low=0.0, high=0.5),
    Key("steady_budget", "share", "the budget while a direction's estimate holds; at most the budget",
        low=0.0, high=0.5, default_text="the budget"),
    Key("train", "time", "a train's length at the link's rate", default="100ms", above=True),
    Key("pairs", "word", "probe every DC pair, or only those a WAN link joins", default="all",
        choices=PROBE_PAIRS, what="probe pairs"),
])
LR_SCHEDULE = Section("experiment.lr_schedule", "the learning rate over steps (`lr_schedule: cosine` "
                                                "names the kind alone)", [
    Key("kind", "word", "none: lr throughout; step: lr x gamma every `every` steps; cosine: to 0 "
                        "over `total` steps", default="none", choices=SCHEDULES, what="schedule"),
    Key("every", "whole", "step: steps between two decays (required)", default=1, low=1, high=10**9),
    Key("gamma", "number", "step: the decay", default=0.1, low=0.0, high=1.0),
    Key("total", "whole", "cosine: steps to reach 0", default=1, low=1, high=10**9,
        default_text="`stop.iterations`"),
])
EXPERIMENT = Section("experiment", "one experiment: a sync scheme over an overlay, a workload and "
                                   "when to stop", [
    Key("sync", "plugin", "the sync scheme: when workers compute and what they send", default="ssgd",
        registry=SYNC),
    Key("sync_options", "options", "the sync scheme's options", default={}, registry=SYNC),
    Key("overlay", "plugin", "the overlay: where the model's pieces go", default="ps",
        registry=OVERLAY),
    Key("overlay_options", "options", "the overlay's options", default={}, registry=OVERLAY),
    Key("coordination", "word", "the coordinator's messages: over the emulated WAN, or over an "
                                "unshaped management network", default="wan",
        choices=("management", "wan")),
    Key("server_dc", "name", "where the servers are (keys sharded across its `servers:` hosts)",
        default_text="the first DC with servers"),
    Key("workload", "plugin", "train: a real model on real data; synthetic: the model's shapes, "
                              "emulated compute", default="train", registry=WORKLOAD),
    Key("model", "plugin", "the model; `flat-N` is N float32 values of shapes only",
        default_text=f"`{TRAIN_MODEL}` (train), `{SYNTHETIC_MODEL}` (synthetic)", registry=MODEL),
    Key("model_options", "options", "the model's options", default={}, registry=MODEL),
    Key("dataset", "plugin", "train: the data, sharded across the workers", default="digits",
        registry=DATASET),
    Key("dataset_options", "options", "the dataset's options", default={}, registry=DATASET),
    Key("data_dir", "text", "the folder a dataset read from disk is in (nothing is downloaded)",
        default="", what="a folder name"),
    Key("partition", "word", "how the data is split: at random, or by label", default="iid",
        choices=("iid", "noniid")),
    Key("batch_size", "whole", "examples per step", default=32, low=1, high=100_000),
    Key("lr", "number", "the learning rate", default=0.1, low=0.0, high=100.0),
    Key("momentum", "number", "SGD's momentum", default=0.9, low=0.0, high=0.999),
    Key("optimizer", "word", "train: the optimizer", default="sgd", choices=OPTIMIZERS),
    Key("weight_decay", "number", "train: L2 weight decay (AdamW: decoupled)", default=0.0, low=0.0,
        high=10.0),
    Key("betas", "list", "train: Adam's [b1, b2]", default=[0.9, 0.999], length=(2, 2),
        item=Key("", "number", "", low=0.0, high=0.99999)),
    Key("lr_schedule", "mapping", "train: the learning rate's schedule", section=LR_SCHEDULE,
        default_text="`none`", alt=Key("", "word", "", choices=SCHEDULES)),
    Key("loss", "word", "train: the loss function", default="cross_entropy", choices=tuple(sorted(LOSSES))),
    Key("metrics", "list", "train: metrics evaluated besides accuracy", default=[],
        item=Key("", "plugin", "", registry=METRIC)),
    Key("compute_time", "time", "synthetic: an iteration's compute at speed 1.0", default="100ms",
        above=True),
    Key("step_time", "time", "train: a step lasts at least this at speed 1.0 (a slower device)",
        above=True, default_text="`0s`: as fast as this machine"),
    Key("eval_every", "whole", "iterations between two evaluations", default=10, low=1, high=10**6),
    Key("eval_period", "time", "above 0: evaluate every this long on wall time instead of every "
                               "eval_every iterations (a copy of the latest global model)", default=0,
        high=3600.0),
    Key("seed", "whole", "seeds the model, the data's split and the delay lines' draws", default=0,
        low=0, high=2**31),
    Key("chunk", "size", "the transport's chunk: the unit it paces and pipelines", default="1mib",
        low="1kib", high="1gib"),
    Key("dead_after", "time", "a silent peer is dead after this; live ones beat every tenth of it",
        default="5s", above=True),
    Key("programs", "list", "workload command: the programs its hosts run, one rank per process",
        item=Key("", "mapping", "", section=programs_section.PROGRAM)),
    Key("master_port", "whole", "workload command: MASTER_PORT, where rank 0 listens", default=29500,
        low=1024, high=65535),
    Key("user", "text", "workload command: who runs the programs", default="", what="a user name",
        default_text="the user who ran sudo"),
    Key("workdir", "text", "workload command: the folder the programs run in, relative to topo.yaml's",
        default="", what="a folder name", default_text="topo.yaml's folder"),
    Key("stop", "mapping", "when the run ends", section=STOP),
    Key("probe", "mapping", "network awareness: probes on every router", section=PROBE,
        default_text="no probes", alt=Key("", "const", "", choices=(True, None))),
])
SECTIONS = (EXPERIMENT, STOP, PROBE, LR_SCHEDULE, programs_section.PROGRAM)
KEYS = EXPERIMENT.names
STOP_KEYS = STOP.names
SCHEDULE_KEYS = LR_SCHEDULE.names
PROBE_KEYS = PROBE.names
# Marks a setting added after runs were keyed by their spec: at its default
# it leaves a run's key as it was (testbed.sweeps.sweep.spec_key), so the sweeps
# find the runs made before it existed.
UNKEYED_AT_DEFAULT = "unkeyed_at_default"


@dataclass(frozen=True)
class ProbeSettings:
    period: float = 2.5        # seconds between two trains of a pair
    budget: float = 0.05       # share of each link direction's capacity for probe bytes
    train_time: float = 0.1    # a train's length at the link's rate
    pairs: str = "all"         # every ordered DC pair, or only those a WAN link joins
    # The budget while a direction's estimate holds (None: `budget` throughout).
    steady_budget: float = field(default=None, metadata={UNKEYED_AT_DEFAULT: True})

    @property
    def budget_when_steady(self):
        return self.budget if self.steady_budget is None else self.steady_budget


@dataclass(frozen=True)
class Experiment:
    sync: str = "ssgd"
    overlay: str = "ps"
    overlay_options: dict = None  # the overlay's parameters ({} for its defaults)
    sync_options: dict = None     # the sync scheme's parameters ({} for its defaults)
    coordination: str = "wan"     # the coordinator's messages: over the WAN, or "management"
    server_dc: str = ""
    workload: str = "train"
    model: str = "mlp"
    dataset: str = "digits"
    model_options: dict = field(default=None, metadata={UNKEYED_AT_DEFAULT: True})
    dataset_options: dict = field(default=None, metadata={UNKEYED_AT_DEFAULT: True})
    optimizer: str = field(default="sgd", metadata={UNKEYED_AT_DEFAULT: True})
    weight_decay: float = field(default=0.0, metadata={UNKEYED_AT_DEFAULT: True})
    betas: tuple = field(default=(0.9, 0.999), metadata={UNKEYED_AT_DEFAULT: True})
    lr_schedule: tuple = field(default=("none", 1, 0.1, 1), metadata={UNKEYED_AT_DEFAULT: True})
    loss: str = field(default="cross_entropy", metadata={UNKEYED_AT_DEFAULT: True})
    metrics: tuple = field(default=(), metadata={UNKEYED_AT_DEFAULT: True})
    # The plug-ins named that are not built in: ((kind, ref, sha256 of its source), ...),
    # so a run is keyed by the code that made it.
    plugins: tuple = field(default=(), metadata={UNKEYED_AT_DEFAULT: True})
    # A command workload's programs (testbed.spec.programs), their MASTER_PORT, their user
    # and the folder they run in (relative to topo.yaml's; "" for that one).
    programs: tuple = field(default=(), metadata={UNKEYED_AT_DEFAULT: True})
    master_port: int = field(default=29500, metadata={UNKEYED_AT_DEFAULT: True})
    user: str = field(default="", metadata={UNKEYED_AT_DEFAULT: True})
    workdir: str = field(default="", metadata={UNKEYED_AT_DEFAULT: True})
    data_dir: str = ""
    partition: str = "iid"
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.9
    compute_time: float = 0.1
    step_time: float = 0.0        # train: a step takes at least this long at speed 1.0 (0: as measured)
    eval_every: int = 10
    # > 0: rank 0 evaluates on wall time, every this many seconds, instead of every eval_every rounds
    eval_period: float = field(default=0.0, metadata={UNKEYED_AT_DEFAULT: True})
    seed: int = 0
    max_iterations: int = 200
    max_time: float = 600.0
    target_accuracy: float = 0.0
    chunk_bytes: int = 1 << 20
    dead_after: float = 5.0
    probe: ProbeSettings = None   # None: no probes


def options_of(plugin, raw, path):
    """A plug-in's parameters as declared in its OPTIONS: known names only,
    each a value its declaration takes, together in a way the plug-in takes
    (built with them, it may refuse a combination with an OptionError)."""
    try:
        options = check_options(plugin.OPTIONS, raw, plugin.NAME)
        plugin(options)
        return options
    except OptionError as e:
        raise SpecError(path if e.key is None else f"{path}.{e.key}", e.message) from None


def plugin(registry, raw, key, default, base_dir, found=None, path=None):
    """(the name to run, the plug-in class) topo.yaml names at
    experiment.KEY; an old name gets its new one, with a warning.  A
    plug-in named by a file path is run from that file's absolute path, and
    one that is not built in is added to `found` with its source's hash."""
    ref = raw.get(key, default) if path is None else raw
    path = path or f"experiment.{key}"
    try:
        cls, origin = registry.load(ref, base_dir)
    except PluginError as e:
        raise SpecError(path, str(e)) from None
    if registry.deprecated(ref):
        log.warning("warning: %s: %s", path, registry.deprecated(ref))
        ref = registry.aliases[ref][0]
    if not origin.builtin:
        if origin.file and ref.rpartition(":")[0].endswith(".py"):
            ref = f"{origin.file}:{origin.attribute}"
        if found is not None:
            found.append((registry.kind, ref, origin.sha256))
    return ref, cls


def parse(raw, datacenters, base_dir=None):
    """raw: the YAML mapping; datacenters: [DataCenter]; base_dir: where
    plug-ins named by a path are found.  Returns an Experiment; raises
    SpecError."""
    EXPERIMENT.check_keys(raw, "experiment")
    p = lambda key: f"experiment.{key}"  # noqa: E731
    read = lambda key: EXPERIMENT.read(raw, key, "experiment")  # noqa: E731
    default = lambda key: EXPERIMENT[key].default  # noqa: E731
    given = lambda key: raw.get(key, default(key))  # noqa: E731

    found = []
    workload, kind = plugin(WORKLOAD, raw, "workload", default("workload"), base_dir, found)
    if getattr(kind, "RUNS_PROGRAMS", False):
        return parse_programs(raw, datacenters, workload, found)
    for key in PROGRAMS_ONLY:
        if key in raw:
            raise SpecError(p(key), "is for workload: command only (programs of your own)")
    sync, scheme = plugin(SYNC, raw, "sync", default("sync"), base_dir, found)
    overlay, over = plugin(OVERLAY, raw, "overlay", default("overlay"), base_dir, found)
    why = mismatch(scheme, over)
    if why:
        raise SpecError(p("overlay"), why)
    overlay_options = options_of(over, given("overlay_options"), p("overlay_options"))
    sync_options = options_of(scheme, given("sync_options"), p("sync_options"))
    why = over().refuse({d.name: d.servers for d in datacenters}, {d.name: d.workers for d in datacenters})
    if why:
        raise SpecError(p("overlay"), why)
    coordination = read("coordination")
    data_dir = read("data_dir")
    trains = issubclass(kind, Train)
    model = raw.get("model", TRAIN_MODEL if trains else SYNTHETIC_MODEL)
    if flat_size(model) is not None:
        model_cls = MODEL.load("flat")[0]
    else:
        model, model_cls = plugin(MODEL, raw, "model", model, base_dir, found)
    model_options = options_of(model_cls, given("model_options"), p("model_options"))
    if trains and not model_cls(model_options).trainable:
        raise SpecError(p("model"), f"{model} has shapes only: it runs a synthetic workload, not "
                                    "train (trainable: " + ", ".join(
                                        n for n, c in MODEL.builtin_classes().items() if c().trainable)
                        + ")")
    dataset, dataset_options = "", {}
    if trains:
        dataset, dataset_cls = plugin(DATASET, raw, "dataset", default("dataset"), base_dir, found)
        dataset_options = options_of(dataset_cls, given("dataset_options"), p("dataset_options"))
        if dataset_cls.NEEDS_DIR and not data_dir:
            raise SpecError(p("data_dir"), f"{dataset} is read from a local folder: name it in data_dir")
        if dataset_cls.NEEDS_DIR and not os.path.isdir(data_dir):
            raise SpecError(p("data_dir"), f"{shown(data_dir)} is not a folder (nothing is downloaded: "
                                           f"put the {dataset} files there)")
        problem = dataset_cls(dataset_options).check(data_dir) if dataset_cls.NEEDS_DIR else None
        if problem:
            raise SpecError(p("data_dir"), problem)
    partition = read("partition")
    training = training_settings(raw, trains, base_dir, found)

    with_servers = [d.name for d in datacenters if d.servers > 0]
    server_dc = raw.get("server_dc", with_servers[0] if with_servers else datacenters[0].name)
    check.word(server_dc, p("server_dc"), [d.name for d in datacenters], "data center")
    if server_dc not in with_servers:
        raise SpecError(p("server_dc"), f"{server_dc} has no servers: give it servers: 1 in datacenters")
    if not any(d.workers for d in datacenters):
        raise SpecError("datacenters", "no data center has workers: the experiment needs at least one")

    iterations, max_time, accuracy = stop_settings(raw)
    if accuracy and workload == "synthetic":
        raise SpecError(p("stop.accuracy"), "a synthetic workload has no accuracy to reach")

    if trains and "total" not in (raw.get("lr_schedule") or {}) and training["lr_schedule"][0] == "cosine":
        kind_, every, gamma, _ = training["lr_schedule"]
        training["lr_schedule"] = (kind_, every, gamma, iterations)    # to 0 at the last iteration

    step_time = 0.0
    if "step_time" in raw:
        if workload != "train":
            raise SpecError(p("step_time"), "is for real training; a synthetic workload's step "
                                            "takes compute_time")
        step_time = read("step_time")
    chunk = read("chunk")

    probe = probe_settings(raw)

    return Experiment(
        sync=sync, sync_options=sync_options, overlay=overlay, overlay_options=overlay_options,
        coordination=coordination,
        server_dc=server_dc,
        workload=workload, model=model, model_options=model_options or None,
        dataset=dataset, dataset_options=dataset_options or None, data_dir=data_dir, partition=partition,
        batch_size=read("batch_size"), lr=read("lr"), momentum=read("momentum"),
        compute_time=read("compute_time"),
        step_time=step_time,
        eval_every=read("eval_every"), eval_period=read("eval_period"), seed=read("seed"),
        max_iterations=iterations, max_time=max_time, target_accuracy=accuracy,
        chunk_bytes=chunk,
        dead_after=read("dead_after"),
        probe=probe, plugins=tuple(found), **training)


def training_settings(raw, trains, base_dir, found):
    """The optimizer, its schedule, the loss and the metrics: what a real
    training run takes besides its learning rate and momentum."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    read = lambda key: EXPERIMENT.read(raw, key, "experiment")  # noqa: E731
    given = [k for k in ("optimizer", "weight_decay", "betas", "lr_schedule", "loss", "metrics")
             if k in raw]
    if given and not trains:
        raise SpecError(p(given[0]), "is for real training; a synthetic workload computes nothing")
    betas = check.sequence(raw.get("betas", EXPERIMENT["betas"].default), p("betas"), "two numbers [b1, b2]")
    if len(betas) not in EXPERIMENT["betas"].length:
        raise SpecError(p("betas"), "must be two numbers [b1, b2]")
    schedule = raw.get("lr_schedule", {})
    if isinstance(schedule, str):
        schedule = {"kind": schedule}
    check.mapping(schedule, p("lr_schedule"), "kind, every, gamma, total")
    LR_SCHEDULE.check_keys(schedule, p("lr_schedule"))
    kind = LR_SCHEDULE.read(schedule, "kind", p("lr_schedule"))
    if kind == "step" and "every" not in schedule:
        raise SpecError(p("lr_schedule.every"), "a step schedule needs every: the steps between decays")
    metrics = check.sequence(raw.get("metrics", EXPERIMENT["metrics"].default), p("metrics"), "metric names")
    return {
        "optimizer": read("optimizer"),
        "weight_decay": read("weight_decay"),
        "betas": tuple(EXPERIMENT["betas"].item.check(b, f"{p('betas')}[{i}]") for i, b in enumerate(betas)),
        "lr_schedule": (kind, *(LR_SCHEDULE.read(schedule, k, p("lr_schedule"))
                                for k in ("every", "gamma", "total"))),
        "loss": read("loss"),
        "metrics": tuple(plugin(METRIC, m, None, None, base_dir, found, path=f"{p('metrics')}[{i}]")[0]
                         for i, m in enumerate(metrics)),
    }


def stop_settings(raw):
    """(iterations, seconds, target accuracy) of experiment.stop."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    stop = check.mapping(raw.get("stop", {}), p("stop"), "iterations, time, accuracy")
    STOP.check_keys(stop, p("stop"))
    return tuple(STOP.read(stop, key, p("stop")) for key in ("iterations", "time", "accuracy"))


def probe_settings(raw):
    """experiment.probe -> ProbeSettings, or None without probes."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    if "probe" not in raw:
        return None
    settings = raw["probe"] if raw["probe"] is not None else {}
    if settings is True:
        settings = {}
    check.mapping(settings, p("probe"), "period, budget, steady_budget, train, pairs; or true")
    PROBE.check_keys(settings, p("probe"))
    budget = PROBE.read(settings, "budget", p("probe"))
    steady = check.unit(parse_fraction, settings.get("steady_budget", budget), p("probe.steady_budget"))
    if not PROBE["steady_budget"].low < steady <= budget:
        raise SpecError(p("probe.steady_budget"),
                        f"{settings['steady_budget']!r} must be above 0% and at most the budget")
    steady = None if steady == budget else steady       # one budget throughout
    return ProbeSettings(
        period=PROBE.read(settings, "period", p("probe")), budget=budget, steady_budget=steady,
        train_time=PROBE.read(settings, "train", p("probe")), pairs=PROBE.read(settings, "pairs", p("probe")))


def parse_programs(raw, datacenters, workload, found):
    """An experiment that runs programs (testbed.spec.programs) instead of
    the testbed's agents: no sync scheme, overlay or model of its own."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    for key in NOT_WITH_PROGRAMS:
        if key in raw:
            raise SpecError(p(key), f"a {workload} workload runs its own programs: it takes no {key}")
    if "programs" not in raw:
        raise SpecError(p("programs"), f"missing: a {workload} workload runs the commands listed here")
    programs = programs_section.parse(raw["programs"], datacenters, p("programs"))
    iterations, max_time, accuracy = stop_settings(raw)
    if accuracy:
        raise SpecError(p("stop.accuracy"), "programs report no accuracy the testbed could stop at")
    user = EXPERIMENT.read(raw, "user", "experiment")
    if user:
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise SpecError(p("user"), f"no user {shown(user)} on this machine") from None
    workdir = EXPERIMENT.read(raw, "workdir", "experiment")
    with_servers = [d.name for d in datacenters if d.servers > 0]
    return Experiment(
        sync="", overlay="", workload=workload, model="", dataset="",
        server_dc=with_servers[0] if with_servers else datacenters[0].name,
        coordination=EXPERIMENT.read(raw, "coordination", "experiment"),
        max_iterations=iterations, max_time=max_time, probe=probe_settings(raw),
        seed=EXPERIMENT.read(raw, "seed", "experiment"),
        programs=programs, user=user, workdir=workdir, plugins=tuple(found),
        master_port=EXPERIMENT.read(raw, "master_port", "experiment"))
