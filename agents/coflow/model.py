"""The big-switch model as plain data.

The network is one non-blocking switch; each machine has an ingress port
(its traffic entering the switch, i.e. what it sends) and an egress port
(what it receives), each with a capacity in size units per time unit.
Port p in 0..m-1 is machine p's ingress, m..2m-1 is machine p-m's egress,
as in Sincronia's reference simulator.  A flow from src to dst uses ports
src and m + dst.  Repeated (src, dst) pairs inside a coflow are summed in
the demand.
"""

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Flow:
    src: int
    dst: int
    size: float


@dataclass
class Coflow:
    id: object
    arrival: float
    flows: tuple
    weight: float = 1.0
    job: object = None
    stage: object = None
    task: object = None
    # A job's iterations after this one, and its compute time per iteration;
    # known for generated search workloads, 0 for plain traces.
    iterations_left: int = 0
    compute: float = 0.0
    # When the stage (or job iteration) this coflow belongs to was released.
    release: float = None

    @property
    def stage_key(self):
        """The stage's identity across tasks; None when the coflow names no stage."""
        return None if self.stage is None else (self.task, self.stage)

    def size(self):
        return sum(f.size for f in self.flows)


@dataclass
class Fabric:
    """Ports of a big switch: capacity per ingress and egress port."""
    machines: int
    ingress: np.ndarray = None
    egress: np.ndarray = None
    capacity: np.ndarray = field(init=False)

    def __post_init__(self):
        m = self.machines
        ing = np.ones(m) if self.ingress is None else np.asarray(self.ingress, dtype=float)
        egr = np.ones(m) if self.egress is None else np.asarray(self.egress, dtype=float)
        self.capacity = np.concatenate([ing, egr])

    @property
    def ports(self):
        return 2 * self.machines

    def flow_ports(self, flow):
        return flow.src, self.machines + flow.dst

    def demand(self, flows, sizes=None):
        """Demand per port of `flows` (sizes override each flow's size)."""
        d = np.zeros(self.ports)
        for i, f in enumerate(flows):
            s = f.size if sizes is None else sizes[i]
            d[f.src] += s
            d[self.machines + f.dst] += s
        return d

    def isolation_time(self, flows, sizes=None):
        """Time the flows need with the whole fabric to themselves."""
        return float(np.max(self.demand(flows, sizes) / self.capacity))
