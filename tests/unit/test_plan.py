import textwrap

from testbed import spec as S
from testbed.emulation.plan import base36, make_plan, shortest_next_hops


def spec_of(text):
    return S.loads(textwrap.dedent(text))


LINE = """
datacenters: [{name: a, workers: 1}, {name: b, workers: 2, servers: 1}, {name: c, workers: 1}]
wan:
  - {between: [a, b], bw: 10mbit, delay: 10ms}
  - {between: [b, c], bw: 10mbit, delay: 10ms}
"""


def test_base36_is_short_and_unique():
    assert [base36(n) for n in (0, 9, 10, 35, 36, 1023)] == ["0", "9", "a", "z", "10", "sf"]


def test_addresses_show_the_data_center_in_the_second_octet():
    plan = make_plan(spec_of(LINE), "1a2b", with_relays=True)
    assert plan.router("a").ip == "10.1.0.1"
    assert [(h.name, h.ip, h.role) for h in plan.hosts if h.dc == "b"] == [
        ("b-r", "10.2.0.1", "router"), ("b-s0", "10.2.0.10", "server"),
        ("b-w0", "10.2.0.11", "worker"), ("b-w1", "10.2.0.12", "worker")]
    assert (plan.wan[1].ip_a, plan.wan[1].ip_b) == ("10.255.1.1", "10.255.1.2")


def test_every_name_carries_the_run_prefix_and_fits_an_interface_name():
    spec = spec_of("""
    datacenters: [{name: abcdefghijklmno, workers: 32}, {name: b, workers: 32}]
    wan: [{between: [abcdefghijklmno, b], bw: 1mbit}]
    """)
    plan = make_plan(spec, "ffff", with_relays=True)
    names = [sw for _, sw in plan.switches]
    for h in plan.hosts:
        names += [h.node, h.intf, h.switch_port]
    for w in plan.wan:
        names += [w.intf_a, w.intf_b, w.relay, w.relay_a, w.relay_b]
    assert all(n.startswith("tbffff") and len(n) <= 15 for n in names)
    assert len(set(names)) == len(names)


def test_without_relays_the_routers_are_joined_directly():
    plan = make_plan(spec_of(LINE), "1a2b", with_relays=False)
    assert all(w.relay == "" for w in plan.wan)


def test_routes_on_a_line_go_through_the_middle():
    plan = make_plan(spec_of(LINE), "1a2b", with_relays=True)
    routes = {(r.node, r.dest): r.via for r in plan.routes}
    assert routes[("tb1a2br0", "10.3.0.0/24")] == "10.255.0.2"   # a -> c via b
    assert routes[("tb1a2br2", "10.1.0.0/24")] == "10.255.1.1"   # c -> a via b
    assert len(plan.routes) == 6


def test_least_delay_path_beats_the_direct_slow_hop():
    spec = spec_of("""
    datacenters: [{name: a}, {name: b}, {name: c}]
    wan:
      - {between: [a, c], bw: 10mbit, delay: 50ms}
      - {between: [a, b], bw: 10mbit, delay: 10ms}
      - {between: [b, c], bw: 10mbit, delay: 10ms}
    """)
    hops = shortest_next_hops(spec)
    assert hops[("a", "c")] == "b" and hops[("c", "a")] == "b"


def test_equal_delay_ties_go_to_fewer_hops_then_to_the_first_listed_neighbour():
    spec = spec_of("""
    datacenters: [{name: a}, {name: b}, {name: c}, {name: d}]
    wan:
      - {between: [a, d], bw: 10mbit, delay: 20ms}
      - {between: [a, b], bw: 10mbit, delay: 10ms}
      - {between: [b, d], bw: 10mbit, delay: 10ms}
      - {between: [a, c], bw: 10mbit, delay: 5ms}
      - {between: [c, b], bw: 10mbit, delay: 5ms}
    """)
    hops = shortest_next_hops(spec)
    assert hops[("a", "d")] == "d"     # 40 ms direct or via b: the direct one has fewer hops
    assert hops[("a", "b")] == "b"     # 20 ms direct vs 20 ms via c: fewer hops


def test_the_partial_mesh_routes_ohio_to_sydney_through_tokyo():
    import os
    spec = S.load(os.path.join(os.path.dirname(__file__), "..", "..", "topologies", "mesh-4dc.yaml"))
    hops = shortest_next_hops(spec)
    assert hops[("ohio", "sydney")] == "tokyo"
    assert hops[("sydney", "ohio")] == "tokyo"


def test_a_management_network_joins_every_router_only_when_asked():
    spec = S.loads(textwrap.dedent("""
    datacenters: [{name: east, workers: 1, servers: 1}, {name: west, workers: 1}]
    wan: [{between: [east, west], bw: 10mbit}]
    """))
    assert make_plan(spec, "0a1b", with_relays=True).management is None
    mgmt = make_plan(spec, "0a1b", with_relays=True, management=True).management
    assert mgmt.switch == "tb0a1bm"
    assert [(p.dc, p.router, p.intf, p.switch_port, p.ip) for p in mgmt.ports] == [
        ("east", "tb0a1br0", "tb0a1br0-m", "tb0a1bm-p0", "10.250.0.1"),
        ("west", "tb0a1br1", "tb0a1br1-m", "tb0a1bm-p1", "10.250.0.2")]
    assert all(len(p.intf) <= 15 and len(p.switch_port) <= 15 for p in mgmt.ports)


def test_bandwidth_routing_takes_the_widest_path_and_delay_routing_the_shortest():
    import textwrap

    import pytest

    from testbed import spec as S
    from testbed.emulation.plan import shortest_next_hops
    text = textwrap.dedent("""\
        datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: c, workers: 1}]
        wan:
          - {between: [a, b], bw: 50mbit, delay: 10ms}
          - {between: [b, c], bw: 50mbit, delay: 10ms}
          - {between: [a, c], bw: 4mbit, delay: 10ms, reverse: {bw: 100mbit}}
        """)
    # By delay a reaches c straight (20 ms of round trip against 40).
    assert shortest_next_hops(S.loads(text))[("a", "c")] == "c"
    # By bandwidth: 1e11 / 4e6 = 25,000 straight against 2,000 + 2,000 through b;
    # the other way c -> a is 100 Mbit/s, 1,000, and stays straight.
    hops = shortest_next_hops(S.loads(text + "routing: bandwidth\n"))
    assert hops[("a", "c")] == "b" and hops[("c", "a")] == "a"
    with pytest.raises(S.SpecError, match="routing: unknown routing 'ospf'"):
        S.loads(text + "routing: ospf\n")
