"""The partial-sum lower bound t_lb and the best tree packing t_opt, on
WANs whose numbers are checked by hand, and their order on random ones."""

import json
import os
import random
import subprocess
import sys

import networkx as nx
import pytest

from testbed import spec as S
from testbed.bounds import Wan, t_cut, t_lb, t_opt, t_win, tree_packing, wan_of
from testbed.bounds.lower import lb_rate, terminal_partitions

M = 1_000_000            # bytes
C = 1_000_000            # bytes/s: M takes 1 s over one link
NETSTORM = os.path.join(os.path.dirname(__file__), "..", "..", "topologies", "netstorm-9dc.yaml")
QUICKSTART = os.path.join(os.path.dirname(__file__), "..", "..", "topologies", "quickstart.yaml")


def star(n, delay=0.0, hub_is_agent=False):
    """n leaf DCs with workers around a hub; every access link C and `delay` each way."""
    leaves = [f"l{i}" for i in range(n)]
    links = {}
    for leaf in leaves:
        links[("hub", leaf)] = links[(leaf, "hub")] = (C, delay)
    agents = leaves + (["hub"] if hub_is_agent else [])
    return Wan.of_numbers(links, agents, leaves)


@pytest.mark.parametrize("n", [3, 4, 6])
def test_a_transit_hub_star_needs_two_n_minus_1_over_n_models_per_access_link(n):
    wan = star(n)
    # Each leaf's uplink carries 2(N-1)/N models (its share out, others' in); the cut
    # bound only sees one model crossing: 1 s.  N=3: 4/3 s, N=4: 3/2 s, N=6: 5/3 s.
    assert t_cut(wan, M) == pytest.approx(1.0)
    assert t_lb(wan, M) == pytest.approx(2 * (n - 1) / n)
    assert t_opt(wan, M) == pytest.approx(2 * (n - 1) / n, rel=1e-5)


def test_a_transit_hub_star_with_delays_adds_two_delays_to_the_bound_and_four_to_the_trees():
    wan = star(4, delay=0.01)
    # Window of every access link: T - 2d (a byte needs d to reach the hub's side and
    # d to reach a leaf), so c (T - 0.02) = 1.5 M: t_lb = 1.5 + 0.02 = 1.52 s.
    assert t_win(wan, M) == pytest.approx(1.52)
    assert t_lb(wan, M) == pytest.approx(1.52)
    # Cut: one leaf-hub-leaf path, 1 s + 2d.
    assert t_cut(wan, M) == pytest.approx(1.02)
    # Stars: a leaf's partial sum reaches the root (2d), the sum goes back (2d).
    assert t_opt(wan, M) == pytest.approx(1.5 + 0.04, rel=1e-5)


@pytest.mark.parametrize("n", [3, 5])
def test_a_hub_that_can_aggregate_needs_one_model_per_access_link(n):
    wan = star(n, hub_is_agent=True)
    # The hub sums every leaf's model and sends the sum back: M/c = 1 s each way at once.
    assert t_lb(wan, M) == pytest.approx(1.0)
    assert t_opt(wan, M) == pytest.approx(1.0, rel=1e-5)
    assert any(tree.root == "hub" for tree in tree_packing(wan).trees)


def test_two_dcs_are_bound_by_their_slower_direction():
    wan = Wan.of_numbers({("a", "b"): (2 * C, 0.03), ("b", "a"): (C, 0.05)}, ["a", "b"])
    # a's M goes over 2C (0.5 s + 30 ms), b's over C (1 s + 50 ms): the exchange ends at 1.05 s.
    assert t_cut(wan, M) == pytest.approx(1.05)
    assert t_lb(wan, M) == pytest.approx(1.05)
    # Trees: a's share goes up b->a and back down a->b, b's the other way round; each
    # direction carries R, so R = C (1 s), and a slice pays both delays: 1.08 s.
    assert t_opt(wan, M) == pytest.approx(1.08, rel=1e-5)
    still = Wan.of_numbers({("a", "b"): (2 * C, 0.0), ("b", "a"): (C, 0.0)}, ["a", "b"])
    assert t_cut(still, M) == pytest.approx(1.0) and t_lb(still, M) == pytest.approx(1.0)
    assert t_opt(still, M) == pytest.approx(1.0, rel=1e-5)


def test_a_ring_is_packed_with_chains_not_stars():
    ring = ["a", "b", "c", "d"]
    links = {}
    for u, v in zip(ring, ring[1:] + ring[:1]):
        links[(u, v)] = links[(v, u)] = (C, 0.0)
    wan = Wan.of_numbers(links, ring)
    # Cut {a}: 2C leave it, 0.5 s.  Four singletons: 2(4-1) = 6 crossings per byte over
    # 8 directions of C: R = 4C/3, 0.75 s.  Stars route over two hops and fall short;
    # the trees that reach it are paths round the ring, found by the pricing.
    assert t_cut(wan, M) == pytest.approx(0.5)
    assert t_lb(wan, M) == pytest.approx(0.75)
    assert t_opt(wan, M) == pytest.approx(0.75, rel=1e-5)


def random_wan(rng, agents_n, transit_n):
    """A connected WAN of agents and transit DCs, random rates (per direction) and delays."""
    names = [f"a{i}" for i in range(agents_n)] + [f"x{i}" for i in range(transit_n)]
    graph = nx.random_labeled_tree(len(names), seed=rng.randrange(10**6))
    for _ in range(rng.randrange(0, len(names))):
        u, v = rng.sample(range(len(names)), 2)
        graph.add_edge(u, v)
    links = {}
    for u, v in graph.edges:
        delay = rng.choice([0.0, 0.005, 0.02])
        links[(names[u], names[v])] = (rng.choice([1, 2, 3, 5, 8]) * C, delay)
        links[(names[v], names[u])] = (rng.choice([1, 2, 3, 5, 8]) * C, delay)
    return Wan.of_numbers(links, names[:agents_n])


def hub_wan(rng, agents_n):
    """Agents around a transit hub with access rates of 2C or 3C: there the
    partition into singletons binds, not a cut (2(N-1) R <= sum of rates < N 2C)."""
    links = {}
    for i in range(agents_n):
        links[(f"a{i}", "x0")] = (rng.choice([2, 3]) * C, 0.0)
        links[("x0", f"a{i}")] = (rng.choice([2, 3]) * C, 0.0)
    return Wan.of_numbers(links, [f"a{i}" for i in range(agents_n)])


@pytest.mark.parametrize("seed", range(12))
def test_compact_partition_constraints_equal_the_enumerated_partitions(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 7 if seed < 2 else 5)
    wan = hub_wan(rng, n) if seed % 2 else random_wan(rng, n, rng.randint(0, 3))
    assert lb_rate(wan, "compact") == pytest.approx(lb_rate(wan, "enumerate"), rel=1e-7)


def test_partitions_are_enumerated_with_a_terminal_in_every_part():
    wan = star(3, hub_is_agent=True)
    parts = list(terminal_partitions(wan))
    # Partitions of 3 leaves (5), the hub joining any part: 1*1 + 3*2 + 1*3 = 10.
    assert len(parts) == 10
    assert all(any(n.startswith("l") for n in part) for p in parts for part in p)


@pytest.mark.parametrize("seed", range(25))
def test_cut_then_lower_bound_then_best_packing_on_random_wans(seed):
    rng = random.Random(1000 + seed)
    wan = random_wan(rng, rng.randint(2, 5), rng.randint(0, 2))
    cut, lb, opt = t_cut(wan, M), t_lb(wan, M), t_opt(wan, M)
    assert 0 < cut <= lb * (1 + 1e-9)
    assert lb <= opt * (1 + 1e-5)


def test_the_bandwidth_bound_is_no_looser_than_the_cut_without_delays():
    for seed in range(10):
        rng = random.Random(2000 + seed)
        wan = random_wan(rng, rng.randint(2, 5), rng.randint(0, 2))
        wan = Wan.of_numbers({k: (r, 0.0) for k, (r, _) in wan.links.items()}, wan.agents)
        # With no delays t_cut is M over the least pairwise max-flow; (B1) alone gives it.
        assert t_cut(wan, M) <= M / lb_rate(wan) * (1 + 1e-7)
        assert M / lb_rate(wan) <= t_opt(wan, M) * (1 + 1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_extracted_trees_span_the_agents_and_their_loads_fit_every_link(seed):
    rng = random.Random(3000 + seed)
    wan = random_wan(rng, rng.randint(3, 5), rng.randint(0, 2))
    packing = tree_packing(wan)
    on_arc = {}
    for tree in packing.trees:
        graph = nx.DiGraph(tree.arcs if tree.kind == "broadcast" else [(v, u) for u, v in tree.arcs])
        assert nx.is_arborescence(graph) and set(graph) == set(wan.agents)
        assert [n for n in graph if graph.in_degree(n) == 0] == [tree.root]
        for arc in tree.arcs:
            on_arc[arc] = on_arc.get(arc, 0.0) + tree.rate
    routed = {arc: sum(rate for _, rate in paths) for arc, paths in packing.routes.items()}
    for arc, rate in on_arc.items():
        assert rate <= routed[arc] * (1 + 1e-6)
    on_link = {}
    for arc, paths in packing.routes.items():
        for path, rate in paths:
            assert path[0] == arc[0] and path[-1] == arc[1]
            for link in zip(path, path[1:]):
                on_link[link] = on_link.get(link, 0.0) + rate
    for link, rate in on_link.items():
        assert rate <= wan.links[link][0] * (1 + 1e-6)
    # Every root reduces and broadcasts the same share; the shares make up R.
    shares = {}
    for tree in packing.trees:
        shares.setdefault(tree.root, {}).setdefault(tree.kind, 0.0)
        shares[tree.root][tree.kind] += tree.rate
    assert sum(min(s.values()) for s in shares.values()) == pytest.approx(packing.rate, rel=1e-5)


def test_a_spec_gives_agents_terminals_and_payload_rates():
    wan = wan_of(S.loads("datacenters: [{name: ps, servers: 1}, {name: core}, "
                         "{name: w1, workers: 1}, {name: w2, workers: 2}]\n"
                         "wan: [{between: [ps, core], bw: 8mbit, delay: 10ms},"
                         " {between: [core, w1], bw: 8mbit}, {between: [core, w2], bw: 8mbit}]\n"))
    assert wan.agents == ("ps", "w1", "w2") and wan.terminals == ("w1", "w2")
    assert wan.links[("ps", "core")] == pytest.approx((1e6 * 1448 / 1514, 0.01))


def run_testbed(*args):
    return subprocess.run([sys.executable, "-m", "testbed.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_the_bound_command_prints_three_ordered_times():
    r = run_testbed("bound", QUICKSTART, "--model-bytes", "1000000", "--json")
    assert r.returncode == 0, r.stderr
    times = json.loads(r.stdout)
    assert set(times) == {"t_cut", "t_lb", "t_opt"}
    assert 0 < times["t_cut"] <= times["t_lb"] <= times["t_opt"]
    r = run_testbed("bound", QUICKSTART, "--model-bytes", "1000000")
    assert r.returncode == 0 and all(k in r.stdout for k in ("t_cut", "t_lb", "t_opt"))


def test_the_bound_command_takes_sizes_as_topo_yaml_writes_them():
    as_bytes = json.loads(run_testbed("bound", QUICKSTART, "--model-bytes", "1048576", "--json").stdout)
    r = run_testbed("bound", QUICKSTART, "--model-bytes", "1mib", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == as_bytes, r.stderr
    r = run_testbed("bound", QUICKSTART, "--model-bytes", "44MB", "--json")
    assert r.returncode == 0, r.stderr
    # 44M is 44e6 bytes or 44 MiB: which, it does not say, so it is refused, naming the units.
    r = run_testbed("bound", QUICKSTART, "--model-bytes", "44M")
    assert r.returncode == 2 and r.stderr == (
        "error: --model-bytes needs a size above zero like 44mb or 44mib (units b, kb, mb, gb, kib, "
        "mib, gib) or a number of bytes, not '44M'\n")


@pytest.mark.parametrize("args", [["--model-bytes", "lots"], ["--model-bytes", "-5"], []])
def test_the_bound_command_refuses_a_bad_size_in_one_line(args):
    r = run_testbed("bound", NETSTORM, *args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr


def test_the_bound_command_refuses_a_bad_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datacenters: [{name: a, workers: 1}]\nwan: [{between: [a, b], bw: 5 mbps}]\n")
    r = run_testbed("bound", str(bad), "--model-bytes", "1000")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("seed", range(4))
def test_each_count_of_trees_per_root_keeps_at_most_that_many_and_no_more_rate(seed):
    from agents.planning.packing import tree_packings
    rng = random.Random(4000 + seed)
    wan = random_wan(rng, rng.randint(4, 6), rng.randint(0, 2))
    free = tree_packing(wan)
    ladder = tree_packings(wan, keeps=[None, 3, 2, 1], give_up=[0.2])
    assert ladder[0][0].rate == pytest.approx(free.rate, rel=1e-6)
    for keep, (most, traded) in zip([None, 3, 2, 1], ladder):
        count = {}
        for tree in most.trees:
            count[(tree.root, tree.kind)] = count.get((tree.root, tree.kind), 0) + 1
        assert keep is None or max(count.values()) <= keep
        assert most.rate <= free.rate * (1 + 1e-6)
        # Rate given up for shallower trees: at least 80% of it kept, never more.
        assert 0.8 * most.rate * (1 - 1e-5) <= traded.rate <= most.rate * (1 + 1e-6)
    # Asked for alone, a count gives what the ladder gives when pruning starts there.
    assert tree_packings(wan, keeps=[3])[0][0].rate == pytest.approx(ladder[1][0].rate, rel=1e-6)
