"""The `search:` section of topo.yaml -> a validated SearchSpec.

A hyper-parameter search instead of one experiment: tasks of
successive-halving searches whose jobs (a parameter server and workers
each, placed on the hosts of one DC, the cluster) synchronize their models
every iteration, while a coflow scheduling policy in the coordinator
orders and paces their transfers (agents/coflow).  The cluster's LAN is
the big switch of the scheduler's model: `lan.bw` is every host NIC's
rate in each direction.

    search:
      dc: cluster                  # the DC whose hosts run the jobs (default: the one with most)
      policy: beamer               # fair, fifo-lm, sincronia, beamer, varys
      policy_options: {}           # the policy's parameters
      tasks: 2                     # concurrent searches
      configs: 2                   # configurations each search starts with
      eta: 2                       # keep the best 1/eta after each stage
      iterations: 2                # per job in the first stage
      growth: 2                    # iterations multiply by this each stage (default eta)
      workers: 2                   # per job
      models: {resnet18: 45, vgg16: 528, alexnet: 233, mobilenet: 17}   # MB each
      scale: 0.01                  # model bytes = MB x scale
      compute: [200ms, 500ms]      # per iteration, drawn per job
      task_gap: 0s                 # task u starts at u x task_gap
      seed: 0
      chunk: 64kib                 # the unit a sender paces and a receiver counts
      stop: {time: 5min}
"""

from dataclasses import dataclass, field

from agents.coflow.policies import COFLOW
from agents.coflow.search import SearchParams, zoo_mb
from agents.plugins import OptionError, PluginError, check_options
from testbed.spec import validate as check
from testbed.spec.declare import Key, Section
from testbed.spec.units import shown
from testbed.spec.validate import SpecError

SEARCH_STOP = Section("search.stop", "when the search ends", [
    Key("time", "time", "from the agents' start", default="5min", above=True),
])
SEARCH = Section("search", "tasks of successive-halving searches on one DC's hosts, their coflows "
                           "ordered by a policy", [
    Key("dc", "name", "the DC whose hosts run the jobs", default_text="the DC with the most hosts"),
    Key("policy", "plugin", "the coflow scheduling policy", default="beamer", registry=COFLOW),
    Key("policy_options", "options", "the policy's options", default={}, registry=COFLOW),
    Key("tasks", "whole", "concurrent searches", default=2, low=1, high=1000),
    Key("configs", "whole", "configurations each search starts with", default=2, low=1, high=10_000),
    Key("eta", "whole", "keep the best 1/eta after each stage", default=2, low=2, high=100),
    Key("iterations", "whole", "iterations per job in the first stage", default=2, low=1, high=10**6),
    Key("growth", "number", "iterations multiply by this each stage", low=1.0, high=100.0,
        default_text="eta"),
    Key("workers", "whole", "workers per job (each job also has a PS)", default=2, low=1, high=1000),
    Key("models", "models", "the models jobs draw from: {name: MB}", default_text="resnet18, vgg16, "
        "alexnet, mobilenet at their fp32 sizes"),
    Key("scale", "number", "a model's bytes are its MB x scale", default=0.01, low=1e-9, high=1e6),
    Key("compute", "list", "[shortest, longest] compute per iteration, drawn per job",
        default=["200ms", "500ms"], length=(2, 2), item=Key("", "time", "")),
    Key("task_gap", "time", "task u starts at u x task_gap", default=0),
    Key("seed", "whole", "seeds the searches' draws", default=0, low=0, high=2**31),
    Key("chunk", "size", "the unit a sender paces and a receiver counts", default="64kib", low="1kib",
        high="1gib"),
    Key("stop", "mapping", "when the search ends", section=SEARCH_STOP),
])
SECTIONS = (SEARCH, SEARCH_STOP)
KEYS = SEARCH.names


@dataclass(frozen=True)
class SearchSpec:
    dc: str
    machines: tuple                  # host names, in the order the plan numbers machines
    params: SearchParams             # the searches the scheduler plans; sizes in MB x scale
    policy: str = "beamer"
    policy_options: dict = field(default_factory=dict)
    chunk_bytes: int = 64 * 1024
    max_time: float = 300.0


def parse(raw, datacenters):
    """raw: the YAML mapping; datacenters: [DataCenter].  Returns a
    SearchSpec; raises SpecError."""
    SEARCH.check_keys(raw, "search")
    p = lambda key: f"search.{key}"  # noqa: E731
    read = lambda key: SEARCH.read(raw, key, "search")  # noqa: E731

    by_name = {d.name: d for d in datacenters}
    dc = check.word(raw.get("dc", max(datacenters, key=lambda d: len(d.hosts)).name), p("dc"),
                    list(by_name), "data center")
    machines = tuple(by_name[dc].hosts)

    policy = raw.get("policy", SEARCH["policy"].default)
    try:
        cls, _ = COFLOW.load(policy)
    except PluginError as e:
        raise SpecError(p("policy"), str(e)) from None
    try:
        given = raw.get("policy_options", SEARCH["policy_options"].default) or {}
        options = check_options(cls.OPTIONS, given, policy)
        cls(**options)
    except OptionError as e:
        raise SpecError(p("policy_options") if e.key is None else f"{p('policy_options')}.{e.key}",
                        e.message) from None

    workers = read("workers")
    if len(machines) < workers + 1:
        raise SpecError(p("workers"), f"a job's {workers} workers and its PS need {workers + 1} hosts; "
                                      f"{dc} has {len(machines)}")
    eta = read("eta")
    growth = read("growth") if "growth" in raw else None
    models = raw.get("models", zoo_mb())
    if not isinstance(models, dict) or not models or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
            for k, v in models.items()):
        raise SpecError(p("models"), "must map model names to sizes in MB above zero")
    compute = raw.get("compute", SEARCH["compute"].default)
    if not isinstance(compute, list) or len(compute) not in SEARCH["compute"].length:
        raise SpecError(p("compute"), f"{shown(compute)} must be [shortest, longest], e.g. [200ms, 500ms]")
    compute = tuple(SEARCH["compute"].item.check(c, p("compute")) for c in compute)
    if compute[0] > compute[1]:
        raise SpecError(p("compute"), f"{shown(raw['compute'])}: the shortest is longer than the longest")
    chunk = read("chunk")
    stop = check.mapping(raw.get("stop", {}), p("stop"), "time")
    SEARCH_STOP.check_keys(stop, p("stop"))
    params = SearchParams(
        tasks=read("tasks"), configs=read("configs"), eta=eta, iterations=read("iterations"),
        growth=growth, workers=workers, machines=len(machines),
        zoo={k: float(v) for k, v in models.items()},
        scale=read("scale"), compute=compute, task_gap=read("task_gap"), seed=read("seed"))
    return SearchSpec(
        dc=dc, machines=machines, params=params, policy=policy, policy_options=dict(options),
        chunk_bytes=chunk, max_time=SEARCH_STOP.read(stop, "time", p("stop")))
