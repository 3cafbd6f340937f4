"""NetStorm as an overlay: plans from policies, the coordinator's versions
and releases, and the executor under random delivery orders, random
re-plans and random multipath detours."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.overlay.netstorm import node as ns_node
from agents.overlay.netstorm import plan as ns_plan
from agents.overlay.layout import Layout
from agents.overlay.netstorm.policy import Policy, relative_change
from testbed.spec.topogen import ring_links
from tests.dataplane_sim import Recorder, simulate


def layout(n_dcs, workers_per_dc=1, size=40, **options):
    """A ring of DCs with a server each; workers_per_dc is a number or a
    list with one per DC."""
    dcs = [f"d{i}" for i in range(n_dcs)]
    per_dc = workers_per_dc if isinstance(workers_per_dc, list) else [workers_per_dc] * n_dcs
    links = [[dcs[a], dcs[b], 8e6, 8e6, 0.01, 0.01] for a, b in ring_links(n_dcs)]
    return Layout(size=size, workers=[[f"{dc}-w{k}", dc] for dc, n in zip(dcs, per_dc) for k in range(n)],
                  servers=[[f"{dc}-s0", dc] for dc in dcs], server_dc=dcs[0], dcs=dcs, links=links,
                  options=options)


def test_a_plan_puts_workers_below_their_server_and_servers_on_the_root_tree():
    lay = layout(3, size=10, piece=4)
    policy = {"perf": {"d0": 2.0, "d1": 1.0, "d2": 0.0},
              "parents": {"d0": {"d1": "d0", "d2": "d0"}, "d1": {"d0": "d1", "d2": "d0"}},
              "routes": {}}
    plan = ns_plan.plan_of(policy, lay)
    # Quotas: d0 ceil(2/3 * 10) = 7, d1 4; pieces of 4 alternate while both have room.
    assert [(p.start, p.stop, p.root) for p in plan.pieces] == [(0, 4, "d0-s0"), (4, 8, "d1-s0"),
                                                               (8, 10, "d0-s0")]
    second = plan.pieces[1]
    assert second.parent == {"d0-w0": "d0-s0", "d1-w0": "d1-s0", "d2-w0": "d2-s0",
                             "d0-s0": "d1-s0", "d2-s0": "d0-s0"}
    assert second.children["d1-s0"] == ["d0-s0", "d1-w0"]
    assert second.children["d0-s0"] == ["d0-w0", "d2-s0"]


def test_a_dc_without_a_server_is_refused_with_its_name():
    assert ns_plan.refuse({"a": 1, "b": 0}) == "netstorm relays at a server in every DC, and b has none"
    assert ns_plan.refuse({"a": 1, "b": 2}) is None


def test_relative_change_is_the_mean_over_the_links_that_moved():
    old = {("a", "b"): 10.0, ("b", "a"): 20.0, ("a", "c"): 5.0}
    new = {("a", "b"): 15.0, ("b", "a"): 10.0, ("a", "c"): 5.0}
    assert relative_change(old, new) == pytest.approx((0.5 + 0.5) / 2)
    assert relative_change(old, dict(old)) is None
    assert relative_change(None, new) is None


def release_all(policy, workers, it):
    out = []
    for w in workers:
        replies, decisions = policy.on_message(w, {"type": "ns_release", "it": it})
        out.append((replies, decisions))
    return out


def test_an_iteration_is_released_once_every_worker_asked_and_carries_new_versions_only():
    lay = layout(3)
    policy = Policy(lay)
    answers = release_all(policy, lay.worker_names, 0)
    assert all(not r for r, _ in answers[:-1])
    replies, decisions = answers[-1]
    assert sorted(dst for dst, _ in replies) == sorted(lay.worker_names + ["d0-s0", "d1-s0", "d2-s0"])
    assert all(h["version"] == 0 and "policy" in h for _, h in replies)
    assert decisions[0]["decision"] == "release"
    replies, _ = release_all(policy, lay.worker_names, 1)[-1]
    assert all(h["version"] == 0 and "policy" not in h for _, h in replies)
    with pytest.raises(ValueError):
        release_all(policy, ["d0-w0", "d0-w0"], 2)


def test_a_speed_report_replans_at_the_next_check_and_a_frozen_policy_never_does():
    for replan, expect in ((1, 1), (0, 0)):
        lay = layout(4, replan=replan, check_period=2.0)
        policy = Policy(lay)
        release_all(policy, lay.worker_names, 0)
        assert policy.tick(now=100.0) == []              # nothing moved yet
        policy.on_message("d1-s0", {"type": "ns_speed", "src": "d0", "dst": "d1", "rate": 80e6})
        assert policy.tick(now=101.0) == []              # the next check is at 102
        decisions = policy.tick(now=102.5)
        assert policy.version == expect and len(decisions) == expect
        replies, _ = release_all(policy, lay.worker_names, 1)[-1]
        assert all(h["version"] == expect and ("policy" in h) == bool(expect) for _, h in replies)


def test_probe_estimates_fill_links_without_samples_and_samples_win():
    lay = layout(3)
    policy = Policy(lay)
    policy.take_estimates({"d0->d1": 80e6, "d1->d0": 40e6, "d0->d9": 1e6})
    policy.on_message("d0-s0", {"type": "ns_speed", "src": "d1", "dst": "d0", "rate": 16e6})
    speeds = policy.speeds()
    assert speeds[("d0", "d1")] == 10e6 and speeds[("d1", "d0")] == 2e6
    assert speeds[("d1", "d2")] == 1.0        # nothing known: all equal


def test_multipath_detours_only_when_the_primary_queue_is_long_and_the_auxiliary_short():
    lay = layout(4, multipath=1, queue_limit=1)
    node = ns_node.Node("d0-s0", lay, 1, Recorder().fold, "coord")
    policy = ns_plan.compute_policy({(a, b): 1.0 for a, b, *_ in
                                [(x[0], x[1]) for x in lay.links] + [(x[1], x[0]) for x in lay.links]},
                               ns_plan.overlay_dcs(lay), lay)
    node.on_message("coord", {"type": "ns_policy", "it": 0, "version": 0, "policy": policy}, None)
    header = {"type": "agg", "it": 0, "piece": 0, "seg": 0}
    # On the 4-ring, d0 -> d1 has the auxiliary path d0-d3-d2-d1.
    assert policy["routes"]["d0>d1"] == [["d0", "d1"], ["d0", "d3", "d2", "d1"]]
    queues = {"d1-s0": 2, "d3-s0": 0}
    assert node.route("d1-s0", header, queues.get) == ("d1-s0", header)      # 2 is not > 2L
    queues["d1-s0"] = 3
    hop, detoured = node.route("d1-s0", header, queues.get)
    assert hop == "d3-s0" and detoured["to"] == "d1-s0" and detoured["route"] == ["d2-s0", "d1-s0"]
    queues["d3-s0"] = 1                                                       # not < L
    assert node.route("d1-s0", header, queues.get) == ("d1-s0", header)


def test_a_relay_stamps_what_it_forwards_by_the_rule_for_what_it_sends():
    # NetStorm samples a link from messages of at least sample_bytes: a relay
    # stamps a large one for its next hop, not a small one, and drops the
    # times the first hop's stamp left behind.
    lay = layout(4, multipath=1, sample_bytes=400)
    relay = ns_node.Node("d3-s0", lay, 1, Recorder().fold, "coord")
    header = {"type": "agg", "it": 0, "piece": 0, "seg": 0, "from": "d0-s0", "to": "d1-s0",
              "route": ["d2-s0", "d1-s0"], "sent": 1.0, "arrived": 2.0}
    (dst, out, _), = relay.on_message("d0-s0", header, np.zeros(100, np.float32))
    assert dst == "d2-s0" and out["route"] == ["d1-s0"] and out["stamp"]
    assert "sent" not in out and "arrived" not in out
    (_, out, _), = relay.on_message("d0-s0", header, np.zeros(99, np.float32))
    assert "stamp" not in out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.lists(st.integers(0, 2), min_size=2, max_size=6),
       st.integers(1, 25), st.integers(1, 9), st.integers(1, 4))
def test_property_replans_at_random_times_keep_every_iteration_on_one_version_and_exact(
        seed, per_dc, size, piece, iterations):
    # Some DCs may have a server and no worker: a relay still busy with
    # iteration t when t + 1 is released.
    if not any(per_dc):
        per_dc[0] = 1
    lay = layout(len(per_dc), per_dc, size=size, piece=piece, check_period=1.0)
    released, results, sums, _, _ = simulate(lay, iterations, seed, replan_chance=0.05,
                                             detour_chance=0.5)
    everyone = lay.worker_names + [s for s, _ in lay.servers]
    for it in range(iterations):
        versions = released[it]
        assert sorted(versions) == sorted(everyone)          # every node heard the release once
        assert len(set(versions.values())) == 1               # ... of one version
        for w, values in results[it].items():
            np.testing.assert_array_equal(values, sums[it], err_msg=f"{w} iteration {it}")


def test_the_simulation_does_replan_and_detour_so_the_property_is_not_vacuous():
    lay = layout(5, [1, 0, 2, 0, 1], size=30, piece=3, check_period=1.0)
    released, results, sums, decisions, detours = simulate(lay, 6, seed=3, replan_chance=0.2,
                                                           detour_chance=0.7)
    versions = {next(iter(v.values())) for v in released.values()}
    assert len(versions) > 2 and any(d["decision"] == "replan" for d in decisions)
    assert detours > 0


def test_a_server_done_with_the_last_iteration_stays_to_relay_others_detours():
    # With every message detoured where it can be, some detour passes a
    # server that has finished: leaving at once, it would take it along.
    lay = layout(5, [1, 1, 1, 1, 1], size=30, piece=3, multipath=1)
    for seed in range(20):
        _, results, sums, _, detours = simulate(lay, 2, seed, replan_chance=0.0,
                                                detour_chance=1.0, leave=True)
        assert detours > 0
        for it in range(2):
            for w, values in results[it].items():
                np.testing.assert_array_equal(values, sums[it], err_msg=f"{w} iteration {it}")


def test_only_servers_whose_messages_may_detour_wait_for_farewells():
    lay = layout(3, multipath=1)
    server = ns_node.Node("d0-s0", lay, 1, Recorder().fold, "coord")
    assert [dst for dst, _, _ in server.farewell()] == ["d1-s0", "d2-s0"]
    assert server.lingering() == ["d1-s0", "d2-s0"]
    server.on_message("d2-s0", {"type": "ns_farewell"}, None)
    assert server.lingering() == ["d1-s0"]
    worker = ns_node.Node("d0-w0", lay, 1, Recorder().fold, "coord")
    assert worker.farewell() == [] and worker.lingering() == []
    single = ns_node.Node("d0-s0", layout(3, multipath=0), 1, Recorder().fold, "coord")
    assert single.farewell() == [] and single.lingering() == []
