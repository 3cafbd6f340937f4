"""Every overlay trains the quickstart over the real emulated WAN to the
star's accuracy: the same SSGD arithmetic, only where the sums are made
differs.  The roots check that every piece of every iteration held exactly
N contributions (a run that did not would fail)."""

import os

import pytest

from agents.events import read_events
from tests.mininet.helpers import ROOT, run_topology

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")
# NetStorm re-plans every 2 s of training: 20 iterations (some 4 s here) leave room for two.
ITERATIONS = 20


def train(tmp_path, overlay, servers_everywhere=False, options=None):
    text = open(QUICKSTART).read()
    text = text.replace("overlay: ps", f"overlay: {overlay}"
                        + (f"\n  overlay_options: {options}" if options else ""))
    text = text.replace("stop: {accuracy: 0.9, iterations: 400, time: 3min}",
                        f"stop: {{iterations: {ITERATIONS}, time: 4min}}")
    if servers_everywhere:
        for dc in ("frankfurt", "tokyo"):
            text = text.replace(f"{{name: {dc}, workers: 2}}", f"{{name: {dc}, workers: 2, servers: 1}}")
    return run_topology(tmp_path, overlay, text)


def events(run, agent):
    return read_events(os.path.join(run, "agents", f"{agent}.jsonl"))


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    return train(tmp_path_factory.mktemp("star"), "ps")


def test_mlnet_aggregates_in_the_wan_and_matches_the_stars_accuracy(tmp_path, star):
    run, summary = train(tmp_path, "mlnet", servers_everywhere=True)
    assert summary["iterations"] == ITERATIONS
    assert abs(summary["final_accuracy"] - star[1]["final_accuracy"]) <= 0.01
    (plan,) = [e["plan"] for e in events(run, "virginia-s0") if e["ev"] == "plan"]
    (piece,) = plan["pieces"]
    # Frankfurt's server sums its DC's workers (and tokyo's subtree, if tokyo hangs below it).
    assert piece["parent"]["frankfurt-w0"] == piece["parent"]["frankfurt-w1"] == "frankfurt-s0"
    # It took in its two workers' gradients and sent one sum up, every iteration.
    (done,) = [e for e in events(run, "frankfurt-s0") if e["ev"] == "done"]
    model = summary["model_bytes"]
    assert done["iterations"] == ITERATIONS
    assert done["bytes_in"] >= ITERATIONS * (2 * model + model)       # two gradients + new model
    assert done["bytes_out"] >= ITERATIONS * (model + 2 * model)      # one sum + model to two
    agg = [e for e in events(run, "virginia-s0") if e["ev"] == "aggregate"]
    assert len(agg) == ITERATIONS and all(e["contributions"] == 6 for e in agg)


def test_tsengine_schedules_every_transfer_and_matches_the_stars_accuracy(tmp_path, star):
    # A piece per tensor, as the original schedules each key: the MLP's
    # 64 x 128 weights (two pieces of 4,096 under this bound), 128, 1,280
    # and 10.  The whole model as one piece (the default) differs only in
    # its cut, which the unit tests check.
    pieces = 5
    run, summary = train(tmp_path, "tsengine", options="{piece_by: tensor, bigarray_bound: 4096}")
    assert summary["iterations"] == ITERATIONS
    assert abs(summary["final_accuracy"] - star[1]["final_accuracy"]) <= 0.01
    decisions = [e for e in events(run, "virginia-c") if e["ev"] == "decision"]
    for kind in ("pair", "distribute"):
        per_round = {}
        for d in decisions:
            if d["decision"] == kind:
                per_round.setdefault((d["it"], d["piece"]), []).append(d["sender"])
        # Each of the 6 workers sent its partial sum once and got the model once per round.
        assert sorted(per_round) == [(it, p) for it in range(ITERATIONS) for p in range(pieces)], kind
        assert all(len(senders) == 6 for senders in per_round.values()), kind
    # Workers relayed to each other: the tree is not the star.
    assert any(d["decision"] == "distribute" and d["sender"] != "virginia-s0" for d in decisions)
    assert any(d["decision"] == "pair" and d["receiver"] != "virginia-s0" for d in decisions)


def test_netstorm_plans_from_measured_speeds_over_several_roots_and_matches_the_star(tmp_path, star):
    # Small pieces and samples, so the small model spreads over roots and
    # its transfers count as speed samples.
    run, summary = train(tmp_path, "netstorm", servers_everywhere=True,
                         options="{piece: 2000, sample_bytes: 4000}")
    assert summary["iterations"] == ITERATIONS
    assert abs(summary["final_accuracy"] - star[1]["final_accuracy"]) <= 0.01
    decisions = [e for e in events(run, "virginia-c") if e["ev"] == "decision"]
    releases = [d for d in decisions if d["decision"] == "release"]
    assert releases[0]["it"] == 0 and len(releases[0]["roots"]) == 3
    # The servers' speed reports moved the policy: re-planned and released again.
    assert any(d["decision"] == "replan" for d in decisions) and len(releases) >= 2
    assert any(src == "sample" for d in releases[1:] for src in d["sources"].values())
    digests = {e["model"] for w in ("virginia-w0", "frankfurt-w1", "tokyo-w0")
               for e in events(run, w) if e["ev"] == "done"}
    assert len(digests) == 1               # every worker ends with the same model
