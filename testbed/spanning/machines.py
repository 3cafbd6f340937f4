"""The machines of a Ray cluster that build one WAN together.

Every machine that joined the cluster with the `testbed` resource (as for
sweeps, docs/clusters.md) gets a Ray actor pinned to it, which starts that
machine's node server (testbed.spanning.node) as a process of its own and
reports where it answers.  The machine's Ray address is its control and
underlay address: the node server answers there, and the VXLAN tunnels of
the WAN's crossing links run between those addresses.  An actor owns
kernel state, so Ray never restarts one: a machine that dies fails the run.

This module imports ray only when a cluster is used.
"""

import json
import os
import select
import subprocess
import sys

from testbed.spanning.client import Machine
from testbed.sweeps import cluster as sweeps_cluster

START_TIMEOUT = 60.0
NODE_MODULE = "testbed.spanning.node"


class NodeServer:
    """A Ray actor on one machine: its node server's process."""

    def __init__(self, machine, address):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", NODE_MODULE, "--machine", machine, "--listen", address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            env={k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",
                                                                  "CUDA_VISIBLE_DEVICES")})
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT)
        line = self.proc.stdout.readline() if ready else b""
        if b'"ready"' not in line:
            self.proc.kill()
            err = self.proc.stderr.read().decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"the node server on {machine} did not start"
                               + (f": {err[-1]}" if err else ""))
        self.port = json.loads(line)["port"]

    def where(self):
        return self.port, os.cpu_count()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


class Cluster:
    """The machines offering `testbed` on the Ray cluster at an address,
    each with its node server started: {name: Machine} in `machines`."""

    def __init__(self, address):
        sweeps_cluster.connect(address)
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        self.ray = ray
        nodes = [n for n in ray.nodes()
                 if n.get("Alive") and n.get("Resources", {}).get(sweeps_cluster.RESOURCE, 0) >= 1]
        nodes.sort(key=lambda n: n["NodeManagerAddress"])
        actor = ray.remote(num_cpus=0, max_restarts=0)(NodeServer)
        self.actors = {}
        self.machines = {}
        self.cores = {}
        name = None
        try:
            for n in nodes:
                name = n["NodeManagerAddress"]
                self.actors[name] = actor.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                    n["NodeID"], soft=False)).remote(name, name)
            for name, a in self.actors.items():
                port, cores = ray.get(a.where.remote(), timeout=START_TIMEOUT)
                self.machines[name] = Machine(name, name, port)
                self.cores[name] = cores
        except ray.exceptions.RayError as e:
            self.close()
            # The actor's own error (the testbed missing there, say), in one line.
            cause = getattr(e, "cause", None) or e
            first = (str(cause).strip().splitlines() or [type(cause).__name__])[-1]
            raise sweeps_cluster.ClusterError(f"machine {name} cannot serve its part: {first}") from None
        except BaseException:
            self.close()
            raise

    def underlay(self):
        return {name: m.address for name, m in self.machines.items()}

    def close(self):
        """Stop every node server (each tears its part down), then leave Ray."""
        for m in self.machines.values():
            m.close()
        for a in self.actors.values():
            try:
                self.ray.get(a.stop.remote(), timeout=120)
            except Exception:  # noqa: BLE001 - a dead machine's part goes with its silence
                pass
            self.ray.kill(a)
        self.actors.clear()
        sweeps_cluster.disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
