"""An agent's configuration: one JSON file per agent, written by the runner.

Plain dataclasses that round-trip through JSON exactly, so what an agent
ran with is on disk in the run folder.
"""

import json
from dataclasses import asdict, dataclass, field, fields


@dataclass
class Peer:
    name: str
    host: str          # IP address on the emulated network
    port: int
    dc: str = ""


@dataclass
class WorkloadSettings:
    kind: str = "train"            # agents.workload's registry: train | synthetic
    model: str = "mlp"             # agents.models' registry, or flat-N
    dataset: str = "digits"        # agents.models' registry (train only)
    data_dir: str = ""
    model_options: dict = field(default_factory=dict)
    dataset_options: dict = field(default_factory=dict)
    partition: str = "iid"         # iid | noniid (by label)
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.9
    optimizer: str = "sgd"         # agents.optim: sgd | adam | adamw
    weight_decay: float = 0.0
    betas: list = field(default_factory=lambda: [0.9, 0.999])     # adam, adamw
    eps: float = 1e-8                                             # adam, adamw
    lr_schedule: str = "none"      # none | step | cosine
    lr_step_every: int = 1         # step: steps between two decays
    lr_gamma: float = 0.1          # step: the decay
    lr_total: int = 1              # cosine: steps to reach 0
    loss: str = "cross_entropy"    # agents.workload.LOSSES
    metrics: list = field(default_factory=list)   # agents.models' metric registry
    compute_time: float = 0.1      # synthetic: seconds per iteration at speed 1.0
    step_time: float = 0.0         # train: a step lasts at least this at speed 1.0 (a slower device)
    eval_every: int = 10
    eval_period: float = 0.0       # > 0: evaluate every this many seconds of wall time instead
    seed: int = 0


# A peer silent for `dead_after` seconds is dead; a live but idle one beats
# HEARTBEATS_PER_DEAD_AFTER times within that, and never more often than
# every HEARTBEAT_MIN seconds.  Every agent beats to every peer, so the beats
# are not free on a slow WAN: at ¼ of NetStorm's rates about a hundred
# connections cross a 1 Mbit/s link, and a beat every 0.5 s (a frame each way)
# took 15% of it; with a minute's `dead_after`, a beat every 6 s takes 1%.
HEARTBEATS_PER_DEAD_AFTER = 10
HEARTBEAT_MIN = 0.5


def heartbeat_interval(dead_after):
    """Seconds between heartbeats for a peer declared dead after `dead_after`."""
    return max(HEARTBEAT_MIN, dead_after / HEARTBEATS_PER_DEAD_AFTER)


@dataclass
class Transport:
    chunk_bytes: int = 1 << 20
    heartbeat_interval: float = None   # None: from dead_after (heartbeat_interval)
    dead_after: float = 5.0        # a peer silent this long is dead
    io_threads: int = 1

    def __post_init__(self):
        if self.heartbeat_interval is None:
            self.heartbeat_interval = heartbeat_interval(self.dead_after)


@dataclass
class ProbeSection:
    """A probe's settings: its trains' period, budget and length, the DC
    pairs it measures, where the other probes publish, and the event files
    it reads passive measurements from."""
    period: float                  # seconds between two trains of a pair
    budget: float                  # share of each link direction for probe bytes
    steady_budget: float           # the same while a direction's estimate holds
    train_time: float              # a train's length at the link's rate
    epoch: float                   # CLOCK_MONOTONIC the probes count periods from
    pub_port: int                  # where every probe publishes its estimates
    pairs: list                    # [{src, dst, links, delay, rate, queue}]
    agent_dcs: dict                # {agent: dc}
    passive_events: list = field(default_factory=list)   # event files of this DC's agents
    link_intfs: dict = field(default_factory=dict)       # {neighbour DC: router interface}


@dataclass
class ViewSection:
    """Where the coordinator reads the network's view from."""
    probe_pub_port: int = 0


@dataclass
class SearchSection:
    """A search scheduler's settings: the search (agents.coflow.search
    SearchParams' fields), its coflow policy and the capacity of every
    machine's NIC, each way, in payload bytes/s."""
    search: dict
    policy: str
    policy_options: dict
    capacity: float


@dataclass
class AgentConfig:
    name: str
    role: str                      # server | worker | coordinator | probe | machine | scheduler
    dc: str
    host: str                      # own address
    port: int
    events: str                    # path of the JSON-lines event file
    sync: str = "ssgd"
    sync_options: dict = field(default_factory=dict)   # the scheme's parameters, if not defaults
    overlay: str = "ps"
    servers: list = field(default_factory=list)    # [Peer]
    workers: list = field(default_factory=list)    # [Peer]
    rank: int = 0                  # worker index, or server index
    speed: float = 1.0             # relative compute speed
    max_iterations: int = 100
    target_accuracy: float = 0.0   # 0: none
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)
    transport: Transport = field(default_factory=Transport)
    speed_file: str = ""           # the runner writes a new speed here to change it live
    probes: list = field(default_factory=list)     # [Peer], one per DC
    layout: dict = field(default_factory=dict)     # what the overlay plans from (a Layout)
    coordinator: Peer = None                       # the experiment's coordinator, if it runs one
    # Each role's own settings.
    probe: ProbeSection = None                     # a probe's
    view: ViewSection = None                       # the coordinator's
    search: SearchSection = None                   # a search scheduler's

    def to_json(self):
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(sorted(unknown))}")
        d["servers"] = [Peer(**p) for p in d.get("servers", [])]
        d["workers"] = [Peer(**p) for p in d.get("workers", [])]
        d["probes"] = [Peer(**p) for p in d.get("probes", [])]
        d["coordinator"] = Peer(**d["coordinator"]) if d.get("coordinator") else None
        d["workload"] = WorkloadSettings(**d.get("workload", {}))
        d["transport"] = Transport(**d.get("transport", {}))
        for key, section in (("probe", ProbeSection), ("view", ViewSection), ("search", SearchSection)):
            d[key] = section(**d[key]) if d.get(key) else None
        return cls(**d)

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.from_json(f.read())

    def save(self, path):
        with open(path, "w") as f:
            f.write(self.to_json() + "\n")
