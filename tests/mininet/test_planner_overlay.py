"""The planner (`overlay: planner`) on the real emulated WAN: it plans from
the probes' estimates, paces every connection at its planned load once
every link is estimated, trains like the star (exact sums), and traces
when each piece reached each node."""

import os
import subprocess
import sys

import pytest

from agents.overlay.planner import plan as planner
from agents.events import read_events
from testbed import spec as S
from testbed.bounds import wan_of
from testbed.run.runner import overlay_layout
from tests.mininet.helpers import ROOT, run_topology

pytestmark = pytest.mark.mininet
QUICKSTART = os.path.join(ROOT, "topologies", "quickstart.yaml")
TRACE = os.path.join(ROOT, "results", "planner-figure", "trace.py")


def events(run, agent):
    return read_events(os.path.join(run, "agents", f"{agent}.jsonl"))


def test_the_planner_plans_from_estimates_paces_its_connections_and_trains_like_the_star(tmp_path):
    # Traced as well (`trace_pieces`): the trace's checks are at the end.
    text = open(QUICKSTART).read()
    # Most rate, not traded for depth: the rate planned is then the estimates' to answer for.
    text = text.replace("overlay: ps", "overlay: planner\n  overlay_options: "
                        "{min_segment: 500, trade_rate: 0, trace_pieces: 1}")
    text = text.replace("stop: {accuracy: 0.9, iterations: 400, time: 3min}",
                        "stop: {iterations: 100, time: 2min}")
    for dc in ("frankfurt", "tokyo"):
        text = text.replace(f"{{name: {dc}, workers: 2}}", f"{{name: {dc}, workers: 2, servers: 1}}")
    run, summary = run_topology(tmp_path, "planner", text)
    assert summary["iterations"] == 100 and summary["final_accuracy"] >= 0.9
    decisions = [e for e in events(run, "virginia-c") if e["ev"] == "decision"]
    releases = [d for d in decisions if d["decision"] == "release"]
    assert releases[0]["it"] == 0 and set(releases[0]["sources"].values()) == {"none"}
    # Once every link had a probe estimate the plan was redone, and that plan is paced.
    paced = [d for d in releases if set(d["sources"].values()) == {"probe"}]
    assert paced, [d["sources"] for d in releases]
    last = releases[-1]
    for dc in ("virginia", "frankfurt", "tokyo"):
        pace = [e["rates"] for e in events(run, f"{dc}-s0") if e["ev"] == "pace"]
        assert all(r == 0 for r in pace[0].values())           # the first plan is a guess
        planned = {f"{v}-s0": bits for key, bits in last["loads"].items()
                   for u, v in [key.split(">")] if u == dc}
        assert pace[-1] == {peer: pytest.approx(planned.get(peer, 0.0)) for peer in pace[-1]}
        assert any(r > 0 for r in pace[-1].values())
    # The estimates were right: the plan's rate is within 10% of the same planner's on the
    # configured links.
    spec = S.load(str(tmp_path / "planner.yaml"))
    layout = overlay_layout(spec, [], [])
    wan = wan_of(spec)
    order = ["virginia", "frankfurt", "tokyo"]
    truth = planner.compute_policy({k: r for k, (r, _) in wan.links.items()},
                                   {k: d for k, (_, d) in wan.links.items()}, order,
                                   layout.__class__(**{**layout.to_dict(), "workers": [[
                                       f"{dc}-w0", dc] for dc in order]}))
    assert last["rate"] == pytest.approx(truth["rate"] * 8, rel=0.1)
    digests = {e["model"] for dc in order for w in (0, 1)
               for e in events(run, f"{dc}-w{w}") if e["ev"] == "done"}
    assert len(digests) == 1
    check_the_trace(run, releases, order)


def check_the_trace(run, releases, order):
    """Every agent logged each iteration's pieces under the version in force
    (the coordinator logs a release where the version changes); a worker
    got every piece of that version's plan from its own DC's server,
    between its start and its end; a server got a partial sum of every
    piece from each of its DC's workers."""
    slices_of = {r["version"]: r["slices"] for r in releases}

    def version_of(it):
        return [r["version"] for r in releases if r["it"] <= it][-1]

    for dc in order:
        server, workers = f"{dc}-s0", [f"{dc}-w{w}" for w in (0, 1)]
        for agent in [server] + workers:
            traced = [e for e in events(run, agent) if e["ev"] == "pieces"]
            assert [e["it"] for e in traced] == list(range(100)), agent
            for e in traced:
                assert e["version"] == version_of(e["it"]), (agent, e["it"])
                assert e["rows"], (agent, e["it"])
                by_kind = {}
                for piece, kind, sender, first, last, count in e["rows"]:
                    assert first <= last and count >= 1, (agent, e["it"], piece)
                    by_kind.setdefault((kind, sender), set()).add(piece)
                pieces = set(range(max(p for p, *_ in e["rows"]) + 1))
                assert 1 <= len(pieces) <= slices_of[e["version"]]
                if agent in workers:
                    assert by_kind == {("dist", server): pieces}, (agent, e["it"])
                    assert all(e["began"] <= first and last <= e["ended"]
                               for _, _, _, first, last, _ in e["rows"]), (agent, e["it"])
                else:
                    assert all(by_kind[("agg", w)] == pieces for w in workers), (agent, e["it"])
    check_the_trace_report(run)


def check_the_trace_report(run):
    """`trace.py` follows the last slice of an iteration from a worker's
    partial sum up to its root and down to the worker that got it last,
    next to what the plan expected of it."""
    out = subprocess.run([sys.executable, TRACE, run, "--iterations", "99"], capture_output=True,
                         text=True, cwd=ROOT, check=True).stdout.splitlines()
    assert out[0].startswith("iteration 99 ") and ", planned " in out[0], out
    assert " due at " in out[1], out                   # what the release planned for the slice
    hops = [line.split() for line in out[2:]]
    kinds = [h[0] for h in hops]
    assert kinds == sorted(kinds) and kinds[0] == "agg" and kinds[-1] == "dist", out
    last_worker = out[1].split(" to ")[1].split()[0].rstrip(":")
    assert hops[0][1].split("-")[1].startswith("w") and hops[-1][3] == last_worker, out
    for (_, _, _, receiver, *_), (_, sender, *_) in zip(hops, hops[1:]):
        assert receiver == sender, out                 # each hop starts where the last one ended
