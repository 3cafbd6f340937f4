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
from testbed.spec.units import shown
from testbed.spec.validate import SpecError

KEYS = {"dc", "policy", "policy_options", "tasks", "configs", "eta", "iterations", "growth",
        "workers", "models", "scale", "compute", "task_gap", "seed", "chunk", "stop"}


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
    check.keys(raw, KEYS, "search")
    p = lambda key: f"search.{key}"  # noqa: E731

    def whole(key, default, low, high):
        return check.whole(raw.get(key, default), p(key), low, high)

    by_name = {d.name: d for d in datacenters}
    dc = check.word(raw.get("dc", max(datacenters, key=lambda d: len(d.hosts)).name), p("dc"),
                    list(by_name), "data center")
    machines = tuple(by_name[dc].hosts)

    policy = raw.get("policy", "beamer")
    try:
        cls, _ = COFLOW.load(policy)
    except PluginError as e:
        raise SpecError(p("policy"), str(e)) from None
    try:
        options = check_options(cls.OPTIONS, raw.get("policy_options", {}) or {}, policy)
        cls(**options)
    except OptionError as e:
        raise SpecError(p("policy_options") if e.key is None else f"{p('policy_options')}.{e.key}",
                        e.message) from None

    workers = whole("workers", 2, 1, 1000)
    if len(machines) < workers + 1:
        raise SpecError(p("workers"), f"a job's {workers} workers and its PS need {workers + 1} hosts; "
                                      f"{dc} has {len(machines)}")
    eta = whole("eta", 2, 2, 100)
    growth = raw.get("growth")
    if growth is not None:
        growth = check.number(growth, p("growth"), 1.0, 100.0)
    models = raw.get("models", zoo_mb())
    if not isinstance(models, dict) or not models or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
            for k, v in models.items()):
        raise SpecError(p("models"), "must map model names to sizes in MB above zero")
    compute = raw.get("compute", ["200ms", "500ms"])
    if not isinstance(compute, list) or len(compute) != 2:
        raise SpecError(p("compute"), f"{shown(compute)} must be [shortest, longest], e.g. [200ms, 500ms]")
    compute = tuple(check.duration(c, p("compute")) for c in compute)
    if compute[0] > compute[1]:
        raise SpecError(p("compute"), f"{shown(raw['compute'])}: the shortest is longer than the longest")
    chunk = check.size(raw.get("chunk", "64kib"), p("chunk"), "1kib", "1gib")
    stop = check.mapping(raw.get("stop", {}), p("stop"), "time")
    check.keys(stop, {"time"}, "search.stop")
    params = SearchParams(
        tasks=whole("tasks", 2, 1, 1000), configs=whole("configs", 2, 1, 10_000), eta=eta,
        iterations=whole("iterations", 2, 1, 10**6), growth=growth, workers=workers,
        machines=len(machines), zoo={k: float(v) for k, v in models.items()},
        scale=check.number(raw.get("scale", 0.01), p("scale"), 1e-9, 1e6), compute=compute,
        task_gap=check.duration(raw.get("task_gap", 0), p("task_gap")), seed=whole("seed", 0, 0, 2**31))
    return SearchSpec(
        dc=dc, machines=machines, params=params, policy=policy, policy_options=dict(options),
        chunk_bytes=chunk, max_time=check.duration(stop.get("time", "5min"), p("stop.time"), positive=True))
