"""A small hyper-parameter search on the emulated cluster (topologies/
hpsearch.yaml: 2 tasks, 4 jobs, 2 stages each) completes under fair
sharing and the policies that pace, never beats the lower bound, and
senders hold the rates the scheduler gives them.  FIFO-LM and Varys run
the same agents over loopback in tests/unit/test_search_agents.py."""

import dataclasses
import os

import pytest

from tests.mininet.helpers import ROOT, run_topology
from tests.stalls import judge, measured

pytestmark = pytest.mark.mininet
HPSEARCH = os.path.join(ROOT, "topologies", "hpsearch.yaml")


@pytest.mark.parametrize("policy", ["fair", "sincronia", "beamer"])
def test_a_small_search_completes_under_each_policy(tmp_path, policy, request):
    # Half the shipped models' sizes in finer chunks: as many chunks a flow, in less time.
    text = open(HPSEARCH).read().replace("policy: beamer", f"policy: {policy}").replace(
        "models: {small: 0.5, large: 2}", "models: {small: 0.25, large: 1}\n  chunk: 32kib")
    paced = policy != "fair"

    def held_rates(result):
        s = result[1]["search"]
        return s["pacing_flows"] >= 1 and abs(s["pacing_worst"] - 1) <= 0.1

    result = measured(lambda: run_topology(tmp_path, policy, text), held_rates)
    for run, summary in [result.detail]:
        s = summary["search"]
        assert (summary["status"], summary["stopped_by"]) == ("completed", "search-finished")
        # Per task: stage 0 runs 2 jobs x 2 iterations, stage 1 the best job x 4.
        assert (s["policy"], s["stages"], s["coflows"]) == (policy, 4, 2 * (2 * 2 + 1 * 4))
        assert s["avg_sct"] >= s["lower_bound"]["avg_sct"]
        assert s["avg_cct"] >= s["lower_bound"]["avg_cct"]
        assert os.path.isfile(os.path.join(run, "sct.png"))
        if not paced:
            assert s["pacing_flows"] == 0          # TCP shares: nobody is paced
    if paced:
        # Each push that kept one rate arrived at that rate, within 10%, unless
        # the hypervisor held the CPUs meanwhile (nothing forwards then).
        judge(request, f"{policy}: every push that kept one rate arrived at it within 10%",
              [dataclasses.replace(result, detail=f"worst pacing {s['pacing_worst']:.3f}")])
