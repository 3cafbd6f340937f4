"""A search's scheduler and machines as real processes over real ZeroMQ
sockets on loopback (no emulated network: the NICs are the machine's
own): under every policy each stage of each task finishes, every coflow's
flows arrive whole, and a paced policy's senders hold their rates."""

import dataclasses
import os
import subprocess
import sys

import pytest

from agents.config import AgentConfig, Peer, SearchSection, Transport
from agents.events import read_events
from testbed.analysis.search_report import pacing
from tests.ports import free_port
from tests.stalls import judge, measured

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHUNK = 16 * 1024
MACHINES = 4
SEARCH = {"tasks": 2, "configs": 2, "eta": 2, "iterations": 2, "growth": None, "workers": 2,
          "machines": MACHINES, "zoo": {"a": 0.25, "b": 0.5}, "scale": 1e6,
          "compute": [0.05, 0.1], "task_gap": 0.0, "seed": 0}
# 4 MB/s per NIC each way: a 0.5 MB push takes 0.125 s alone.
CAPACITY = 4e6


def configs(tmp_path, policy):
    machines = [Peer(f"m{i}", "127.0.0.1", free_port(), "c") for i in range(MACHINES)]
    scheduler = Peer("c-c", "127.0.0.1", free_port(), "c")
    transport = Transport(chunk_bytes=CHUNK)
    out = [AgentConfig(name=p.name, role="machine", dc="c", host=p.host, port=p.port,
                       events=str(tmp_path / f"{p.name}.jsonl"), workers=machines,
                       coordinator=scheduler, transport=transport) for p in machines]
    out.append(AgentConfig(name=scheduler.name, role="scheduler", dc="c", host=scheduler.host,
                           port=scheduler.port, events=str(tmp_path / "c-c.jsonl"), workers=machines,
                           coordinator=scheduler, transport=transport,
                           search=SearchSection(search=SEARCH, policy=policy, policy_options={},
                                                capacity=CAPACITY)))
    return out


def run_search(tmp_path, policy):
    procs = []
    for cfg in configs(tmp_path, policy):
        path = tmp_path / f"{cfg.name}.json"
        cfg.save(str(path))
        procs.append(subprocess.Popen([sys.executable, "-m", "agents", cfg.role, "--config",
                                       str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT))
    try:
        for p in procs:
            out, _ = p.communicate(timeout=60)
            assert p.returncode == 0, out.decode()[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return read_events(str(tmp_path / "c-c.jsonl"))


# fair and sincronia run on the emulated cluster (tests/mininet/test_search.py).
@pytest.mark.parametrize("policy", ["fifo-lm", "beamer", "varys"])
def test_every_stage_of_a_search_finishes_under_each_policy(tmp_path, policy, request):
    run = measured(lambda: run_search(tmp_path, policy), lambda events: held_rates(paced(events)))
    finished_whole(run.detail)
    # Loopback is far faster than the rates given: the pacing alone holds
    # them, but not while the hypervisor holds the CPUs (tests/stalls.py).
    judge(request, f"{policy}'s paced flows hold their rates within 15% on loopback",
          [dataclasses.replace(run, detail=paced(run.detail))])


def paced(events):
    return pacing([e for e in events if e["ev"] == "flow"], CHUNK)


def held_rates(ratios):
    # Within 15%, not the 10% the emulated cluster holds (tests/mininet/
    # test_search.py): five processes share two cores here, and a flow of
    # 0.13 s is timed by when its receiver got the CPU (CI: 0.899).
    return bool(ratios) and all(0.85 <= r <= 1.15 for r in ratios)


def finished_whole(events):
    kinds = [e["ev"] for e in events]
    (start,) = [e for e in events if e["ev"] == "start"]
    planned = {(t, s): (jobs, iters) for t, s, jobs, iters in start["stages"]}
    stages = [e for e in events if e["ev"] == "stage_done"]
    assert {(e["task"], e["stage"]) for e in stages} == set(planned)
    # Every job runs its stage's iterations: one coflow each.
    coflows = [e for e in events if e["ev"] == "coflow_done"]
    assert len(coflows) == sum(jobs * iters for jobs, iters in planned.values())
    flows = [e for e in events if e["ev"] == "flow"]
    announced = {e["id"]: e for e in events if e["ev"] == "coflow"}
    assert len(flows) == sum(e["flows"] for e in announced.values())
    for f in flows:
        size = announced[int(f["id"].split(":")[0])]["bytes"] // 4     # 2 pushes + 2 pulls
        assert f["bytes"] == size
    assert kinds[-1] == "search_done"
