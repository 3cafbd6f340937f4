"""The planner's detours on a volatile WAN: which auxiliary paths a plan
carries, and that a server takes one only under a plan that carries it,
when its planned connection is backed up (hand-checked)."""

import dataclasses

import networkx as nx
import numpy as np

from agents.overlay import optimal
from agents.overlay.layout import Layout
from agents.overlay.optimal_node import Node
from agents.overlay.optimal_policy import Policy
from tests.dataplane_sim import Recorder, simulate

C = 1_000_000.0          # bytes/s


def kite(**options):
    """d0, d1, d2 in a triangle and d3 hanging off d2, every link C and
    10 ms each way, a server and a worker in every DC; routes the fewest hops."""
    return layout_over([("d0", "d1"), ("d1", "d2"), ("d0", "d2"), ("d2", "d3")], **options)


def layout_over(pairs, **options):
    dcs = sorted({dc for pair in pairs for dc in pair})
    links = [[a, b, C * 8, C * 8, 0.01, 0.01] for a, b in pairs]
    graph = nx.Graph(pairs)
    routes = {f"{a}>{b}": nx.shortest_path(graph, a, b) for a in dcs for b in dcs if a != b}
    return Layout(size=4000, workers=[[f"{d}-w0", d] for d in dcs], servers=[[f"{d}-s0", d] for d in dcs],
                  server_dc="d0", dcs=dcs, links=links, routes=routes, options=options)


def speeds(layout):
    return {link: C for a, b, *_ in layout.links for link in ((a, b), (b, a))}


def policy_of(layout):
    order = optimal.overlay_dcs(layout)
    policy = optimal.compute_policy(speeds(layout), {}, order, layout)
    return {**policy, "loads": {"d0>d1": C / 2, "d2>d3": C / 2, "d3>d0": C / 4}}


def test_each_connection_keeps_its_own_path_first_and_gets_the_disjoint_detours_within_the_hops():
    layout = kite()
    routes = optimal.detour_routes(policy_of(layout), speeds(layout), optimal.overlay_dcs(layout), layout)
    # d0 -> d1 can go round through d2; d2 -> d3 has no other way.  d3 -> d0 is
    # routed d3-d2-d0, and the only other way (d3-d2-d1-d0) crosses d2 too.
    assert routes == {"d0>d1": [["d0", "d1"], ["d0", "d2", "d1"]],
                      "d2>d3": [["d2", "d3"]], "d3>d0": [["d3", "d0"]]}
    # On a ring of four, d0 -> d1's only detour takes three connections: in
    # with `detour_hops: 3`, out with the default 2.
    for hops, expected in ((2, [["d0", "d1"]]), (3, [["d0", "d1"], ["d0", "d3", "d2", "d1"]])):
        ring = layout_over([("d0", "d1"), ("d1", "d2"), ("d2", "d3"), ("d3", "d0")], detour_hops=hops)
        policy = {**policy_of(ring), "loads": {"d0>d1": C / 2}}
        assert optimal.detour_routes(policy, speeds(ring), optimal.overlay_dcs(ring), ring)["d0>d1"] \
            == expected


def released(layout, policy, name="d0-s0"):
    node = Node(name, layout, 1000, Recorder().fold, "coord")
    node.on_message("coord", {"type": "ns_policy", "it": 0, "version": 0, "policy": policy}, None)
    return node


def test_a_server_detours_a_backed_up_connection_only_under_a_plan_with_detours():
    layout = kite(multipath=1)
    policy = policy_of(layout)
    header = {"type": "agg", "it": 0, "piece": 0, "seg": 0}
    queues = {"d1-s0": 3, "d2-s0": 0}                     # more than 2L queued to d1, none to d2
    steady = released(layout, policy)
    assert steady.route("d1-s0", header, queues.get) == ("d1-s0", header)
    routes = optimal.detour_routes(policy, speeds(layout), optimal.overlay_dcs(layout), layout)
    volatile = released(layout, {**policy, "routes": routes})
    hop, detoured = volatile.route("d1-s0", header, queues.get)
    assert hop == "d2-s0" and detoured["to"] == "d1-s0" and detoured["route"] == ["d1-s0"]
    queues["d1-s0"] = 2                                   # not more than 2L
    assert volatile.route("d1-s0", header, queues.get) == ("d1-s0", header)
    # The relay hands it on by the header, unstamped (the planner takes no samples).
    relay = released(layout, {**policy, "routes": routes}, name="d2-s0")
    assert relay.on_message("d0-s0", detoured, None) == [("d1-s0", {**detoured, "route": []}, None)]
    # Iterations not yet released stay on their path.
    assert volatile.route("d1-s0", {**header, "it": 5}, {"d1-s0": 9, "d2-s0": 0}.get) \
        == ("d1-s0", {**header, "it": 5})
    # Servers that may detour wait for each other's farewells; none without multipath.
    assert volatile.lingering() == ["d1-s0", "d2-s0", "d3-s0"]
    assert released(kite(), policy).lingering() == []          # multipath is off by default


def test_with_messages_detoured_every_iteration_sums_every_contribution_once():
    # A coordinator that finds the WAN volatile plans with detours from the
    # first release; messages in random order, each offered a detour at
    # random queue lengths, and servers that leave once done (a detour's
    # relay must stay for it: leaving at once loses one within 20 seeds).
    lay = dataclasses.replace(kite(multipath=1), size=40)
    detoured = 0
    for seed in range(20):
        policy = Policy(lay)
        policy.volatile = True
        released, results, sums, _, detours = simulate(lay, 3, seed, replan_chance=0.0, detour_chance=1.0,
                                                       leave=True, node_class=Node, policy=policy)
        detoured += detours
        assert all(len(set(versions.values())) == 1 for versions in released.values())
        for it in range(3):
            assert sorted(results[it]) == sorted(lay.worker_names)
            for w, values in results[it].items():
                np.testing.assert_array_equal(values, sums[it], err_msg=f"{w} iteration {it}")
    assert detoured > 0
