"""NetStorm's control logic against the authors' reference numbers and
cases checked by hand."""

import json
import math
import os
import random
import subprocess
import sys

import pytest

from agents.overlay.netstorm import __main__ as ns_cli
from agents.overlay.netstorm import routes as ns_routes

# The authors' control logic on their static 9-DC graph, as published with
# the reference re-expression of NetStorm's scheduler (see the module
# docstring of agents.overlay.netstorm).
REFERENCE = os.path.join(os.path.dirname(__file__), "data", "netstorm-static-9dc.json")
NINE_DC = {"1-2": 500, "2-3": 500, "2-5": 500, "4-5": 500, "5-7": 500, "6-7": 500, "7-8": 500,
           "8-9": 500, "1-3": 100, "3-4": 100, "4-6": 100, "6-8": 100, "6-9": 100}


def nine_dc():
    speeds, order = ns_cli.read_graph({"links_mbit": NINE_DC})
    mb = {link: s / 1e6 for link, s in speeds.items()}
    return mb, order, ns_routes.all_routes(mb, order)


def test_the_nine_dc_reference_numbers_of_the_issue():
    speeds, order, routes = nine_dc()
    perf = ns_routes.performance(routes, speeds, order)
    assert [round(perf[r], 2) for r in order] == [12.5, 15.62, 12.5, 15.62, 20.83, 15.62,
                                                  20.83, 15.62, 12.5]
    three = ns_routes.performance(routes, speeds, order, keep=3)
    roots = [r for r in order if three[r] > 0]
    assert roots == ["5", "7", "8"]
    total = sum(three.values())
    assert [round(three[r] / total, 3) for r in roots] == [0.364, 0.364, 0.273]
    one = ns_routes.performance(routes, speeds, order, keep=1)
    assert [r for r in order if one[r] > 0] == ["7"]
    parents = ns_routes.tree_parents(routes, order, "7")
    assert parents == {"1": "2", "2": "5", "3": "2", "4": "5", "5": "7", "6": "7", "8": "7",
                       "9": "8"}
    assert routes[("1", "9")] == [("1", "2", "5", "7", "8", "9"), ("1", "3", "4", "6", "9")]


def test_the_command_prints_the_reference_file_for_its_graph(tmp_path):
    with open(REFERENCE) as f:
        reference = json.load(f)
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"links_mbit": reference["links_mbit"]}))
    r = subprocess.run([sys.executable, "-m", "agents.overlay.netstorm", str(graph)],
                       capture_output=True, text=True, check=True)
    assert r.stderr == ""                       # no RuntimeWarning about the package's own import
    got = json.loads(r.stdout)
    for key, value in reference.items():
        if key != "links_mbit":
            assert got[key] == value, key


def test_the_command_refuses_a_topo_yaml_in_one_sentence():
    topo = os.path.join(os.path.dirname(REFERENCE), "..", "..", "..", "topologies", "quickstart.yaml")
    r = subprocess.run([sys.executable, "-W", "error", "-m", "agents.overlay.netstorm", topo],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"error: {topo} is not JSON (line 1, column 1): it should hold a graph with "
                        "links_mbit or links_mbit_per_direction\n")


def test_directions_tree_uses_speeds_to_the_root_and_metric_speeds_from_it():
    # A triangle a, b, c.  b -> a is slow direct (1) but fast via c (10 each
    # way); a -> b is fast direct (100).  So b's parent in a's tree is c
    # (cost 0.2 against 1), while a's metric sees only a -> b and a -> c.
    speeds = {("a", "b"): 100.0, ("b", "a"): 1.0, ("b", "c"): 10.0, ("c", "b"): 10.0,
              ("c", "a"): 10.0, ("a", "c"): 50.0}
    order = ["a", "b", "c"]
    routes = ns_routes.all_routes(speeds, order)
    assert ns_routes.tree_parents(routes, order, "a") == {"b": "c", "c": "a"}
    # From a: a->b (100) and a->c (50) both at depth 0: T = 1/50.
    assert ns_routes.root_metric(routes, speeds, order, "a") == pytest.approx(50.0)
    # From b: b->c (10) at depth 0, b->c->a puts c->a (10) at depth 1: T = 0.2.
    assert routes[("b", "a")][0] == ("b", "c", "a")
    assert ns_routes.root_metric(routes, speeds, order, "b") == pytest.approx(5.0)


def test_without_multipath_only_the_primary_path_is_kept():
    speeds, order, _ = nine_dc()
    routes = ns_routes.all_routes(speeds, order, multipath=False)
    assert all(len(paths) == 1 for paths in routes.values())


def random_graph(rng, n):
    links = {(i, (i + 1) % n) for i in range(n)}
    while len(links) < min(n + n // 2, n * (n - 1) // 2):
        a, b = rng.sample(range(n), 2)
        if (b, a) not in links:
            links.add((a, b))
    speeds = {}
    for a, b in links:
        speeds[(str(a), str(b))] = rng.choice([5.0, 10.0, 20.0, 40.0, 80.0])
        speeds[(str(b), str(a))] = rng.choice([5.0, 10.0, 20.0, 40.0, 80.0])
    return speeds, [str(i) for i in range(n)]


def test_property_primary_is_cheapest_and_auxiliaries_share_no_middle_dc():
    rng = random.Random(4)
    for _ in range(30):
        speeds, order = random_graph(rng, rng.randint(3, 8))
        adjacent = ns_routes.neighbours(speeds, order)
        routes = ns_routes.all_routes(speeds, order)
        for (i, j), paths in routes.items():
            cheapest = min(ns_routes.path_cost(p, speeds) for p in ns_routes.simple_paths(adjacent, i, j))
            assert ns_routes.path_cost(paths[0], speeds) == pytest.approx(cheapest)
            costs = [ns_routes.path_cost(p, speeds) for p in paths]
            assert costs == sorted(costs)
            seen = set()
            for p in paths:
                assert p[0] == i and p[-1] == j and len(set(p)) == len(p)
                assert not set(p[1:-1]) & seen
                seen |= set(p[1:-1])
        for r in order:
            parents = ns_routes.tree_parents(routes, order, r)
            for j in parents:          # every DC reaches the root by its parents
                hops, here = 0, j
                while here != r:
                    assert (here, parents[here]) in speeds
                    here, hops = parents[here], hops + 1
                    assert hops < len(order)


def test_split_by_hand_two_to_one():
    # Quotas: a ceil(2/3 * 30) = 20, b 10; pieces of 5 alternate until b is full.
    got = ns_routes.split(30, {"a": 2.0, "b": 1.0}, ["a", "b"], piece=5)
    assert got == [(0, 5, "a"), (5, 10, "b"), (10, 15, "a"), (15, 20, "b"), (20, 25, "a"),
                   (25, 30, "a")]


def test_split_skips_roots_without_metric_and_refuses_none():
    assert ns_routes.split(7, {"a": 0.0, "b": 3.0}, ["a", "b"], piece=3) == [(0, 3, "b"), (3, 6, "b"),
                                                                     (6, 7, "b")]
    with pytest.raises(ValueError):
        ns_routes.split(7, {"a": 0.0}, ["a"])


def test_property_split_assigns_every_element_once_and_keeps_to_the_quotas():
    rng = random.Random(9)
    for _ in range(200):
        order = [str(i) for i in range(rng.randint(1, 9))]
        perf = {r: rng.choice([0.0, rng.uniform(0.5, 30)]) for r in order}
        if not any(perf.values()):
            perf[order[0]] = 1.0
        size, piece = rng.randint(1, 5000), rng.randint(1, 700)
        cuts = ns_routes.split(size, perf, order, piece)
        assert cuts[0][0] == 0 and cuts[-1][1] == size
        assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
        assert all(0 < stop - start <= piece for start, stop, _ in cuts)
        total = sum(perf.values())
        for r in order:
            got = sum(stop - start for start, stop, root in cuts if root == r)
            quota = math.ceil(perf[r] / total * size)
            assert got == 0 if perf[r] == 0 else got < quota + piece


@pytest.mark.parametrize("doc, says", [
    ([], "JSON object"),
    ({"links": {}}, "links_mbit"),
    ({"links_mbit": {"1-2": -5}}, "positive rate"),
    ({"links_mbit": {"12": 5}}, "not a link like 1-2"),
    ({"links_mbit_per_direction": {"1-2": 5}}, "not a link like 1->2"),
])
def test_a_bad_graph_is_one_sentence_and_exit_2(tmp_path, capsys, doc, says):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(doc))
    assert ns_cli.main([str(graph)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_the_shipped_9dc_topologies_are_the_reference_graph_scaled_25x():
    from testbed import spec as S
    here = os.path.join(os.path.dirname(__file__), "..", "..", "topologies")
    for name in ("netstorm-9dc.yaml", "netstorm-9dc-dynamic.yaml"):
        spec = S.load(os.path.join(here, name))
        speeds = {}
        for link in spec.wan:
            speeds[(link.a[2:], link.b[2:])] = link.ab.rate / 8 / 1e6 * 25
            speeds[(link.b[2:], link.a[2:])] = link.ba.rate / 8 / 1e6 * 25
        order = [str(i) for i in range(1, 10)]
        perf = ns_routes.performance(ns_routes.all_routes(speeds, order), speeds, order)
        assert [round(perf[r], 2) for r in order] == [12.5, 15.62, 12.5, 15.62, 20.83, 15.62,
                                                      20.83, 15.62, 12.5], name
        assert all(dc.servers == 1 and dc.workers == 1 for dc in spec.datacenters)
