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
from testbed.spec.units import parse_fraction, shown
from testbed.spec.validate import SpecError

log = logging.getLogger(__name__)

KEYS = {"sync", "overlay", "server_dc", "workload", "model", "dataset", "data_dir", "partition",
        "model_options", "dataset_options", "optimizer", "weight_decay", "betas", "lr_schedule",
        "loss", "metrics", "programs", "master_port", "user", "workdir",
        "batch_size", "lr", "momentum", "compute_time", "step_time", "eval_every", "eval_period", "seed",
        "stop", "chunk",
        "overlay_options", "sync_options", "coordination",
        "dead_after", "probe"}
STOP_KEYS = {"iterations", "time", "accuracy"}
SCHEDULE_KEYS = {"kind", "every", "gamma", "total"}
PROBE_KEYS = {"period", "budget", "steady_budget", "train", "pairs"}
PROBE_PAIRS = ("all", "neighbours")
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
    each a value its declaration takes."""
    try:
        return check_options(plugin.OPTIONS, raw, plugin.NAME)
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
    check.keys(raw, KEYS, "experiment")
    p = lambda key: f"experiment.{key}"  # noqa: E731

    found = []
    workload, kind = plugin(WORKLOAD, raw, "workload", "train", base_dir, found)
    if getattr(kind, "RUNS_PROGRAMS", False):
        return parse_programs(raw, datacenters, workload, found)
    for key in ("programs", "master_port", "user", "workdir"):
        if key in raw:
            raise SpecError(p(key), "is for workload: command only (programs of your own)")
    sync, scheme = plugin(SYNC, raw, "sync", "ssgd", base_dir, found)
    overlay, over = plugin(OVERLAY, raw, "overlay", "ps", base_dir, found)
    why = mismatch(scheme, over)
    if why:
        raise SpecError(p("overlay"), why)
    overlay_options = options_of(over, raw.get("overlay_options", {}), p("overlay_options"))
    sync_options = options_of(scheme, raw.get("sync_options", {}), p("sync_options"))
    why = over().refuse({d.name: d.servers for d in datacenters}, {d.name: d.workers for d in datacenters})
    if why:
        raise SpecError(p("overlay"), why)
    coordination = check.word(raw.get("coordination", "wan"), p("coordination"), ["management", "wan"],
                              "coordination")
    data_dir = raw.get("data_dir", "")
    if not isinstance(data_dir, str):
        raise SpecError(p("data_dir"), f"{shown(data_dir)} is not a folder name")
    trains = issubclass(kind, Train)
    model = raw.get("model", "mlp" if trains else "resnet18")
    if flat_size(model) is not None:
        model_cls = MODEL.load("flat")[0]
    else:
        model, model_cls = plugin(MODEL, raw, "model", model, base_dir, found)
    model_options = options_of(model_cls, raw.get("model_options", {}), p("model_options"))
    if trains and not model_cls(model_options).trainable:
        raise SpecError(p("model"), f"{model} has shapes only: it runs a synthetic workload, not "
                                    "train (trainable: " + ", ".join(
                                        n for n, c in MODEL.builtin_classes().items() if c().trainable)
                        + ")")
    dataset, dataset_options = "", {}
    if trains:
        dataset, dataset_cls = plugin(DATASET, raw, "dataset", "digits", base_dir, found)
        dataset_options = options_of(dataset_cls, raw.get("dataset_options", {}), p("dataset_options"))
        if dataset_cls.NEEDS_DIR and not data_dir:
            raise SpecError(p("data_dir"), f"{dataset} is read from a local folder: name it in data_dir")
        if dataset_cls.NEEDS_DIR and not os.path.isdir(data_dir):
            raise SpecError(p("data_dir"), f"{shown(data_dir)} is not a folder (nothing is downloaded: "
                                           f"put the {dataset} files there)")
    partition = check.word(raw.get("partition", "iid"), p("partition"), ["iid", "noniid"], "partition")
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
        step_time = check.duration(raw["step_time"], p("step_time"), positive=True)
    chunk = check.size(raw.get("chunk", "1mib"), p("chunk"), "1kib", "1gib")

    probe = probe_settings(raw)

    return Experiment(
        sync=sync, sync_options=sync_options, overlay=overlay, overlay_options=overlay_options,
        coordination=coordination,
        server_dc=server_dc,
        workload=workload, model=model, model_options=model_options or None,
        dataset=dataset, dataset_options=dataset_options or None, data_dir=data_dir, partition=partition,
        batch_size=check.whole(raw.get("batch_size", 32), p("batch_size"), 1, 100_000),
        lr=check.number(raw.get("lr", 0.1), p("lr"), 0.0, 100.0),
        momentum=check.number(raw.get("momentum", 0.9), p("momentum"), 0.0, 0.999),
        compute_time=check.duration(raw.get("compute_time", "100ms"), p("compute_time"), positive=True),
        step_time=step_time,
        eval_every=check.whole(raw.get("eval_every", 10), p("eval_every"), 1, 10**6),
        eval_period=check.duration(raw.get("eval_period", 0), p("eval_period"), upper=3600.0),
        seed=check.whole(raw.get("seed", 0), p("seed"), 0, 2**31),
        max_iterations=iterations, max_time=max_time, target_accuracy=accuracy,
        chunk_bytes=chunk,
        dead_after=check.duration(raw.get("dead_after", "5s"), p("dead_after"), positive=True),
        probe=probe, plugins=tuple(found), **training)


def training_settings(raw, trains, base_dir, found):
    """The optimizer, its schedule, the loss and the metrics: what a real
    training run takes besides its learning rate and momentum."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    given = [k for k in ("optimizer", "weight_decay", "betas", "lr_schedule", "loss", "metrics")
             if k in raw]
    if given and not trains:
        raise SpecError(p(given[0]), "is for real training; a synthetic workload computes nothing")
    betas = check.sequence(raw.get("betas", [0.9, 0.999]), p("betas"), "two numbers [b1, b2]")
    if len(betas) != 2:
        raise SpecError(p("betas"), "must be two numbers [b1, b2]")
    schedule = raw.get("lr_schedule", {"kind": "none"})
    if isinstance(schedule, str):
        schedule = {"kind": schedule}
    check.mapping(schedule, p("lr_schedule"), "kind, every, gamma, total")
    check.keys(schedule, SCHEDULE_KEYS, p("lr_schedule"))
    kind = check.word(schedule.get("kind", "none"), p("lr_schedule.kind"), SCHEDULES, "schedule")
    if kind == "step" and "every" not in schedule:
        raise SpecError(p("lr_schedule.every"), "a step schedule needs every: the steps between decays")
    metrics = check.sequence(raw.get("metrics", []), p("metrics"), "metric names")
    return {
        "optimizer": check.word(raw.get("optimizer", "sgd"), p("optimizer"), OPTIMIZERS, "optimizer"),
        "weight_decay": check.number(raw.get("weight_decay", 0.0), p("weight_decay"), 0.0, 10.0),
        "betas": tuple(check.number(b, f"{p('betas')}[{i}]", 0.0, 0.99999) for i, b in enumerate(betas)),
        "lr_schedule": (kind, check.whole(schedule.get("every", 1), p("lr_schedule.every"), 1, 10**9),
                        check.number(schedule.get("gamma", 0.1), p("lr_schedule.gamma"), 0.0, 1.0),
                        check.whole(schedule.get("total", 1), p("lr_schedule.total"), 1, 10**9)),
        "loss": check.word(raw.get("loss", "cross_entropy"), p("loss"), sorted(LOSSES), "loss"),
        "metrics": tuple(plugin(METRIC, m, None, None, base_dir, found, path=f"{p('metrics')}[{i}]")[0]
                         for i, m in enumerate(metrics)),
    }


def stop_settings(raw):
    """(iterations, seconds, target accuracy) of experiment.stop."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    stop = check.mapping(raw.get("stop", {}), p("stop"), "iterations, time, accuracy")
    check.keys(stop, STOP_KEYS, "experiment.stop")
    iterations = check.whole(stop.get("iterations", 200), p("stop.iterations"), 1, 10**7)
    max_time = check.duration(stop.get("time", "10min"), p("stop.time"), positive=True)
    accuracy = check.number(stop.get("accuracy", 0.0), p("stop.accuracy"), 0, 1)
    return iterations, max_time, accuracy


def probe_settings(raw):
    """experiment.probe -> ProbeSettings, or None without probes."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    if "probe" not in raw:
        return None
    settings = raw["probe"] if raw["probe"] is not None else {}
    if settings is True:
        settings = {}
    check.mapping(settings, p("probe"), "period, budget, steady_budget, train, pairs; or true")
    check.keys(settings, PROBE_KEYS, "experiment.probe")
    budget = check.unit(parse_fraction, settings.get("budget", "5%"), p("probe.budget"))
    if not 0 < budget <= 0.5:
        raise SpecError(p("probe.budget"), f"{settings['budget']!r} must be above 0% and at most 50%")
    steady = check.unit(parse_fraction, settings.get("steady_budget", budget), p("probe.steady_budget"))
    if not 0 < steady <= budget:
        raise SpecError(p("probe.steady_budget"),
                        f"{settings['steady_budget']!r} must be above 0% and at most the budget")
    steady = None if steady == budget else steady       # one budget throughout
    pairs = check.word(settings.get("pairs", "all"), p("probe.pairs"), PROBE_PAIRS, "probe pairs")
    return ProbeSettings(
        period=check.duration(settings.get("period", "2500ms"), p("probe.period"), positive=True),
        budget=budget, steady_budget=steady,
        train_time=check.duration(settings.get("train", "100ms"), p("probe.train"), positive=True),
        pairs=pairs)


def parse_programs(raw, datacenters, workload, found):
    """An experiment that runs programs (testbed.spec.programs) instead of
    the testbed's agents: no sync scheme, overlay or model of its own."""
    p = lambda key: f"experiment.{key}"  # noqa: E731
    for key in ("sync", "overlay", "sync_options", "overlay_options", "model", "dataset",
                "model_options", "dataset_options", "optimizer", "lr_schedule", "metrics"):
        if key in raw:
            raise SpecError(p(key), f"a {workload} workload runs its own programs: it takes no {key}")
    if "programs" not in raw:
        raise SpecError(p("programs"), f"missing: a {workload} workload runs the commands listed here")
    programs = programs_section.parse(raw["programs"], datacenters, p("programs"))
    iterations, max_time, accuracy = stop_settings(raw)
    if accuracy:
        raise SpecError(p("stop.accuracy"), "programs report no accuracy the testbed could stop at")
    user = raw.get("user", "")
    if not isinstance(user, str):
        raise SpecError(p("user"), f"{shown(user)} is not a user name")
    if user:
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise SpecError(p("user"), f"no user {shown(user)} on this machine") from None
    workdir = raw.get("workdir", "")
    if not isinstance(workdir, str):
        raise SpecError(p("workdir"), f"{shown(workdir)} is not a folder")
    with_servers = [d.name for d in datacenters if d.servers > 0]
    return Experiment(
        sync="", overlay="", workload=workload, model="", dataset="",
        server_dc=with_servers[0] if with_servers else datacenters[0].name,
        coordination=check.word(raw.get("coordination", "wan"), p("coordination"),
                                ["management", "wan"], "coordination"),
        max_iterations=iterations, max_time=max_time, probe=probe_settings(raw),
        seed=check.whole(raw.get("seed", 0), p("seed"), 0, 2**31),
        programs=programs, user=user, workdir=workdir, plugins=tuple(found),
        master_port=check.whole(raw.get("master_port", 29500), p("master_port"), 1024, 65535))
