"""The `experiment:` section of topo.yaml -> a validated Experiment.

Picks one value on each axis (sync, overlay), the workload and when to stop.
A combination that makes no sense is refused here with a sentence saying
why, before anything is built.
"""

import os
from dataclasses import dataclass, field

from agents import models
from agents.overlay import OVERLAYS
from agents.sync import SCHEMES
from testbed.spec.units import UnitError, parse_fraction, parse_size, parse_time, shown

KEYS = {"sync", "overlay", "server_dc", "workload", "model", "dataset", "data_dir", "partition",
        "batch_size", "lr", "momentum", "compute_time", "step_time", "eval_every", "seed", "stop", "chunk",
        "overlay_options", "sync_options", "coordination",
        "dead_after", "probe"}
STOP_KEYS = {"iterations", "time", "accuracy"}
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
    data_dir: str = ""
    partition: str = "iid"
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.9
    compute_time: float = 0.1
    step_time: float = 0.0        # train: a step takes at least this long at speed 1.0 (0: as measured)
    eval_every: int = 10
    seed: int = 0
    max_iterations: int = 200
    max_time: float = 600.0
    target_accuracy: float = 0.0
    chunk_bytes: int = 1 << 20
    dead_after: float = 5.0
    probe: ProbeSettings = None   # None: no probes


def options_of(module, raw, path, error):
    """An overlay's or a sync scheme's parameters: known names only, each a
    number of the kind of its default (a whole number where the default is
    one) in its range, or, where the default is a word, one of its words."""
    if not isinstance(raw, dict):
        raise error(path, f"must be a mapping of {module.NAME}'s parameters")
    out = {}
    for key, value in raw.items():
        if key not in module.OPTIONS:
            known = ", ".join(sorted(module.OPTIONS)) or "none"
            raise error(f"{path}.{key}", f"{module.NAME} has no parameter {key!r} (it has: {known})")
        if isinstance(module.OPTIONS[key], str):
            words = module.RANGES[key]
            if value not in words:
                raise error(f"{path}.{key}", f"{shown(value)} must be one of {', '.join(words)}")
            out[key] = value
            continue
        whole = isinstance(module.OPTIONS[key], int)
        low, high = module.RANGES[key]
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) \
                or not low <= value <= high:
            raise error(f"{path}.{key}", f"{value!r} must be a{' whole' if whole else ''} number "
                                         f"in {low}..{high}")
        out[key] = value
    return out


def parse(raw, datacenters, error, check_keys):
    """raw: the YAML mapping; datacenters: [DataCenter]; error(path, msg)
    builds the spec's error and error.at(path, expected) turns any wrong
    type met while checking one key into it; check_keys(mapping, allowed,
    path) refuses unknown keys.  Returns an Experiment."""
    check_keys(raw, KEYS, "experiment")
    p = lambda key: f"experiment.{key}"  # noqa: E731

    def choice(key, options, default):
        value = raw.get(key, default)
        if not isinstance(value, str) or value not in options:
            raise error(p(key), f"unknown {key} {shown(value)}; available: {', '.join(options)}")
        return value

    def number(key, default, low, high, kind=float):
        value = raw.get(key, default)
        with error.at(p(key), f"a number in {low}..{high}"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    (kind is int and not isinstance(value, int)) or not low <= value <= high:
                raise error(p(key), f"{shown(value)} must be a{'' if kind is float else ' whole'} "
                                    f"number in {low}..{high}")
            return kind(value)

    def duration(path, value):
        try:
            t = parse_time(value)
        except UnitError as e:
            raise error(path, str(e)) from None
        if t <= 0:
            raise error(path, f"{shown(value)} must be above zero")
        return t

    def text(key):
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise error(p(key), f"{shown(value)} is not a folder name")
        return value

    sync = choice("sync", sorted(SCHEMES), "ssgd")
    overlay = choice("overlay", sorted(OVERLAYS), "ps")
    if overlay not in SCHEMES[sync].OVERLAYS:
        raise error(p("overlay"), f"{sync} runs over {', '.join(SCHEMES[sync].OVERLAYS)}, not {overlay}")
    overlay_options = options_of(OVERLAYS[overlay], raw.get("overlay_options", {}),
                                 p("overlay_options"), error)
    sync_options = options_of(SCHEMES[sync], raw.get("sync_options", {}), p("sync_options"), error)
    refuse = getattr(OVERLAYS[overlay], "refuse", None)
    why = (refuse({d.name: d.servers for d in datacenters}, {d.name: d.workers for d in datacenters})
           if refuse else None)
    if why:
        raise error(p("overlay"), why)
    coordination = choice("coordination", ["management", "wan"], "wan")
    workload = choice("workload", ["synthetic", "train"], "train")
    data_dir = text("data_dir")
    if workload == "train":
        model = choice("model", list(models.TRAINABLE), "mlp")
        dataset = choice("dataset", list(models.DATASETS), "digits")
        if dataset != "digits" and not data_dir:
            raise error(p("data_dir"), f"{dataset} is read from a local folder: name it in data_dir")
        if dataset != "digits" and not os.path.isdir(data_dir):
            raise error(p("data_dir"), f"{shown(data_dir)} is not a folder (nothing is downloaded: "
                                       f"put the {dataset} files there)")
    else:
        model = raw.get("model", "resnet18")
        if not isinstance(model, str) or not (model in models.SYNTHETIC or models.is_flat(model)):
            raise error(p("model"), f"unknown model {shown(model)}; available: "
                                    f"{', '.join(models.SYNTHETIC)}, or flat-N (one tensor of N values)")
        dataset = ""
    partition = choice("partition", ["iid", "noniid"], "iid")

    with_servers = [d.name for d in datacenters if d.servers > 0]
    server_dc = raw.get("server_dc", with_servers[0] if with_servers else datacenters[0].name)
    names = [d.name for d in datacenters]
    if not isinstance(server_dc, str) or server_dc not in names:
        raise error(p("server_dc"), f"unknown data center {shown(server_dc)} "
                                    f"(data centers: {', '.join(names)})")
    if server_dc not in with_servers:
        raise error(p("server_dc"), f"{server_dc} has no servers: give it servers: 1 in datacenters")
    if not any(d.workers for d in datacenters):
        raise error("datacenters", "no data center has workers: the experiment needs at least one")

    stop = raw.get("stop", {})
    if not isinstance(stop, dict):
        raise error(p("stop"), "must be a mapping of iterations, time, accuracy")
    check_keys(stop, STOP_KEYS, "experiment.stop")
    iterations = stop.get("iterations", 200)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations <= 10**7:
        raise error(p("stop.iterations"), f"{iterations!r} must be a whole number of iterations")
    max_time = duration(p("stop.time"), stop.get("time", "10min"))
    accuracy = stop.get("accuracy", 0.0)
    if isinstance(accuracy, bool) or not isinstance(accuracy, (int, float)) or not 0 <= accuracy <= 1:
        raise error(p("stop.accuracy"), f"{accuracy!r} must be a fraction between 0 and 1")
    if accuracy and workload == "synthetic":
        raise error(p("stop.accuracy"), "a synthetic workload has no accuracy to reach")

    step_time = 0.0
    if "step_time" in raw:
        if workload != "train":
            raise error(p("step_time"), "is for real training; a synthetic workload's step "
                                        "takes compute_time")
        step_time = duration(p("step_time"), raw["step_time"])

    try:
        chunk = parse_size(raw.get("chunk", "1mib"))
    except UnitError as e:
        raise error(p("chunk"), str(e)) from None
    if not 1024 <= chunk <= 1 << 30:
        raise error(p("chunk"), "must be between 1kib and 1gib")

    probe = None
    if "probe" in raw:
        settings = raw["probe"] if raw["probe"] is not None else {}
        if settings is True:
            settings = {}
        if not isinstance(settings, dict):
            raise error(p("probe"),
                        "must be a mapping of period, budget, steady_budget, train, pairs (or true)")
        check_keys(settings, PROBE_KEYS, "experiment.probe")
        budget = settings.get("budget", "5%")
        try:
            budget = parse_fraction(budget)
        except UnitError as e:
            raise error(p("probe.budget"), str(e)) from None
        if not 0 < budget <= 0.5:
            raise error(p("probe.budget"), f"{settings['budget']!r} must be above 0% and at most 50%")
        steady = settings.get("steady_budget", budget)
        try:
            steady = parse_fraction(steady)
        except UnitError as e:
            raise error(p("probe.steady_budget"), str(e)) from None
        if not 0 < steady <= budget:
            raise error(p("probe.steady_budget"),
                        f"{settings['steady_budget']!r} must be above 0% and at most the budget")
        steady = None if steady == budget else steady       # one budget throughout
        pairs = settings.get("pairs", "all")
        if pairs not in PROBE_PAIRS:
            raise error(p("probe.pairs"), f"{pairs!r} is not one of {', '.join(PROBE_PAIRS)}")
        probe = ProbeSettings(period=duration(p("probe.period"), settings.get("period", "2500ms")),
                              budget=budget, steady_budget=steady,
                              train_time=duration(p("probe.train"), settings.get("train", "100ms")),
                              pairs=pairs)

    return Experiment(
        sync=sync, sync_options=sync_options, overlay=overlay, overlay_options=overlay_options,
        coordination=coordination,
        server_dc=server_dc,
        workload=workload, model=model,
        dataset=dataset, data_dir=data_dir, partition=partition,
        batch_size=number("batch_size", 32, 1, 100_000, int),
        lr=number("lr", 0.1, 0.0, 100.0), momentum=number("momentum", 0.9, 0.0, 0.999),
        compute_time=duration(p("compute_time"), raw.get("compute_time", "100ms")),
        step_time=step_time,
        eval_every=number("eval_every", 10, 1, 10**6, int), seed=number("seed", 0, 0, 2**31, int),
        max_iterations=iterations, max_time=max_time, target_accuracy=float(accuracy),
        chunk_bytes=chunk, dead_after=duration(p("dead_after"), raw.get("dead_after", "5s")),
        probe=probe)
