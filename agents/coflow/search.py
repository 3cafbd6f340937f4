"""A synthetic successive-halving hyper-parameter search workload (seeded).

Each of `tasks` searches starts `configs` configurations; a stage runs
every surviving configuration for the stage's iterations, then keeps the
best 1/eta by a seeded score (at least one) and multiplies the iterations
by `growth` (eta by default); the search ends after the stage run by a
single configuration.  A configuration is one job: a parameter server and
`workers` workers on distinct machines, a model drawn from `zoo` (sizes in
MB, times `scale` size units per MB), a compute time per iteration drawn
uniformly from `compute`.  One iteration is the compute time, then one
coflow: every worker pushes the model to the PS and the PS sends it back
to every worker.  A job's next iteration starts when its coflow finishes;
a stage ends when its last job's last coflow finishes, and the next stage
starts then.  Task u starts at u * `task_gap`.

The whole plan (who runs in which stage, for how long) follows from the
seed, so lower bounds can be computed before simulating (bounds.py).
"""

from dataclasses import dataclass, field

import numpy as np

from agents.coflow.model import Coflow, Fabric, Flow
from agents.models import model_named
from agents.models.shapes import count

# The models a search draws from by default.
ZOO = ("resnet18", "vgg16", "alexnet", "mobilenet")


def zoo_mb(names=ZOO):
    """{model: its fp32 parameters in MiB}, from the models' own shapes."""
    return {name: count(model_named(name).shapes()) * 4 / 2**20 for name in names}


@dataclass
class SearchParams:
    tasks: int = 2
    configs: int = 8
    eta: int = 2
    iterations: int = 2
    growth: float = None
    workers: int = 2
    machines: int = 8
    zoo: dict = field(default_factory=zoo_mb)
    scale: float = 0.01
    compute: tuple = (0.5, 2.0)
    task_gap: float = 0.0
    seed: int = 0

    def check(self):
        if self.tasks < 1 or self.configs < 1 or self.iterations < 1 or self.workers < 1:
            raise ValueError("tasks, configs, iterations and workers must each be at least 1")
        if self.eta < 2:
            raise ValueError(f"eta must be at least 2, not {self.eta}")
        if self.machines < self.workers + 1:
            raise ValueError(f"{self.workers} workers and a PS need {self.workers + 1} machines, "
                             f"not {self.machines}")
        if not self.zoo or min(self.zoo.values()) <= 0 or self.scale <= 0:
            raise ValueError("model sizes and scale must be above 0")
        if not 0 <= self.compute[0] <= self.compute[1]:
            raise ValueError(f"compute must be a range lo <= hi of times >= 0, not {self.compute}")


@dataclass
class Job:
    task: str
    name: str
    model: str
    flows: tuple
    compute: float
    score: float


@dataclass
class Stage:
    task: str
    name: str
    jobs: list
    iterations: int

    @property
    def key(self):
        return (self.task, self.name)


def plan(params):
    """Jobs and stages of every task: {task: [Stage, ...]} in stage order."""
    params.check()
    rng = np.random.default_rng(params.seed)
    growth = params.eta if params.growth is None else params.growth
    models = sorted(params.zoo)
    tasks = {}
    for u in range(params.tasks):
        task = f"t{u}"
        jobs = []
        for k in range(params.configs):
            model = models[int(rng.integers(len(models)))]
            size = params.zoo[model] * params.scale
            where = rng.choice(params.machines, params.workers + 1, replace=False)
            ps, workers = int(where[0]), [int(w) for w in where[1:]]
            flows = tuple([Flow(w, ps, size) for w in workers] + [Flow(ps, w, size) for w in workers])
            jobs.append(Job(task, f"c{k}", model, flows,
                            float(rng.uniform(*params.compute)), float(rng.random())))
        stages, survivors, iters = [], jobs, float(params.iterations)
        while True:
            stages.append(Stage(task, f"s{len(stages)}", survivors, max(1, int(round(iters)))))
            if len(survivors) == 1:
                break
            keep = max(1, len(survivors) // params.eta)
            survivors = sorted(survivors, key=lambda j: j.score, reverse=True)[:keep]
            iters *= growth
        tasks[task] = stages
    return tasks


class SearchWorkload:
    """The simulator's source for a successive-halving plan."""

    def __init__(self, params):
        self.params = params
        self.tasks = plan(params)
        self.fabric = Fabric(params.machines)
        self._starts = {}
        self._stage_of = {}
        self._left = {}       # (task, job) -> iterations left in its stage
        self._unfinished = {}  # stage key -> jobs not done with the stage
        self._next_id = 0

    @property
    def stages(self):
        return [s for stages in self.tasks.values() for s in stages]

    def _coflow(self, stage, job, now):
        left = self._left[(job.task, job.name)] - 1
        self._left[(job.task, job.name)] = left
        self._next_id += 1
        return Coflow(self._next_id, now + job.compute, job.flows, job=job.name, stage=stage.name,
                      task=job.task, iterations_left=left, compute=job.compute, release=now)

    def _start(self, stage, now):
        self._starts[stage.key] = now
        self._unfinished[stage.key] = len(stage.jobs)
        for job in stage.jobs:
            self._stage_of[(job.task, job.name)] = stage
            self._left[(job.task, job.name)] = stage.iterations
        return [self._coflow(stage, job, now) for job in stage.jobs]

    def initial(self):
        out = []
        for u, stages in enumerate(self.tasks.values()):
            out += self._start(stages[0], u * self.params.task_gap)
        return out

    def on_done(self, coflow, now):
        stage = self._stage_of[(coflow.task, coflow.job)]
        if coflow.iterations_left > 0:
            job = next(j for j in stage.jobs if j.name == coflow.job)
            return [self._coflow(stage, job, now)]
        self._unfinished[stage.key] -= 1
        if self._unfinished[stage.key]:
            return []
        stages = self.tasks[stage.task]
        k = stages.index(stage)
        return self._start(stages[k + 1], now) if k + 1 < len(stages) else []

    def stage_start(self, key):
        return self._starts.get(key)

    def stage_of(self, coflow):
        return self._stage_of[(coflow.task, coflow.job)]

    def stage_finished(self, key):
        """Whether every job of a started stage is done with it."""
        return self._unfinished.get(key) == 0
