"""The data a WAN over several machines is built from: each machine's
share and its tunnels (which VNI, which addresses, which interface ends
each), the driver's plan taken from the machines' own plans, the clock
offset of a machine, and the agents' event times moved onto the driver's
clock."""

import dataclasses
import io
import json
import tarfile
import threading
import time

import pytest

from testbed.emulation.plan import make_plan
from testbed.emulation.share import (
    LINK_BITS,
    Share,
    ShareError,
    Tunnel,
    lagged_spec,
    shares,
    vni,
)
from testbed.emulation.share import lagged as lagged_direction
from testbed.spanning import node
from testbed.spanning.client import Machine
from testbed.spanning.network import merged_plan, spec_digest
from testbed.spanning.records import shift_times, unpack
from tests.mininet.helpers import topology
from tests.ports import free_port

SPLIT = {"virginia": "A", "frankfurt": "A", "tokyo": "B"}
UNDERLAY = {"A": "192.0.2.1", "B": "192.0.2.2"}


def quickstart():
    return topology("quickstart")          # links: 0 virginia-frankfurt, 1 virginia-tokyo, 2 frankfurt-tokyo


def test_only_the_links_between_machines_get_tunnels_with_the_runs_vnis():
    parts = shares(quickstart(), SPLIT, UNDERLAY, vni_base=5)
    a, b = parts["A"], parts["B"]
    assert a.dcs == {"virginia", "frankfurt"} and b.dcs == {"tokyo"}
    # 5 << 10 = 5120: link 1's VNI is 5121, link 2's 5122, on both machines.
    assert a.tunnels == (Tunnel(1, 5121, "192.0.2.1", "192.0.2.2"), Tunnel(2, 5122, "192.0.2.1", "192.0.2.2"))
    assert b.tunnels == (Tunnel(1, 5121, "192.0.2.2", "192.0.2.1"), Tunnel(2, 5122, "192.0.2.2", "192.0.2.1"))
    assert Share.from_dict(json.loads(json.dumps(a.to_dict()))) == a


def test_one_machine_has_no_tunnels():
    parts = shares(quickstart(), dict.fromkeys(SPLIT, "A"), {"A": "192.0.2.1"}, vni_base=1)
    assert parts["A"].tunnels == () and len(parts["A"].dcs) == 3


def test_a_tunnel_ends_where_the_local_network_would_have_its_veth():
    spec = quickstart()
    parts = shares(spec, SPLIT, UNDERLAY, vni_base=1)
    relayed = make_plan(spec, "1a2b", with_relays=True)
    w = relayed.wan[1]                      # virginia (A) - tokyo (B)
    # The delay line stays on a's machine; its far side is A's tunnel end.
    assert parts["A"].tunnel_end(relayed, w) == (w.relay, w.relay_b)
    assert parts["B"].tunnel_end(relayed, w) == (relayed.router("tokyo").node, w.intf_b)
    direct = make_plan(spec, "1a2b", with_relays=False)
    assert parts["A"].tunnel_end(direct, direct.wan[1]) == (direct.router("virginia").node,
                                                            direct.wan[1].intf_a)
    # Who shapes what: each direction at its sender's machine, the delay on a's.
    assert parts["A"].shapes(w, "virginia") and not parts["A"].shapes(w, "tokyo")
    assert parts["A"].delays(w) and not parts["B"].delays(w)


def test_vnis_stay_in_24_bits_and_a_link_index_in_its_field():
    assert vni(1, 0) == 1 << LINK_BITS
    assert vni((1 << (24 - LINK_BITS)) - 1, (1 << LINK_BITS) - 1) == (1 << 24) - 1
    with pytest.raises(ShareError):
        vni(1 << (24 - LINK_BITS), 0)
    with pytest.raises(ShareError, match="at most 1024 links"):
        vni(1, 1 << LINK_BITS)


def test_a_placement_missing_a_dc_or_an_address_is_refused_in_one_sentence():
    with pytest.raises(ShareError, match="data center tokyo is placed on no machine"):
        shares(quickstart(), {"virginia": "A", "frankfurt": "A"}, UNDERLAY, 1)
    with pytest.raises(ShareError, match="machine B has no underlay address"):
        shares(quickstart(), SPLIT, {"A": "192.0.2.1"}, 1)


def test_the_drivers_plan_names_what_each_machine_built():
    spec = quickstart()
    plans = {"A": make_plan(spec, "aaaa", with_relays=True), "B": make_plan(spec, "bbbb", with_relays=True)}
    merged = merged_plan(plans, SPLIT, "aaaa+bbbb")
    assert merged.host("tokyo-w0").node.startswith("tbbbbb")
    assert merged.host("virginia-w0").node.startswith("tbaaaa")
    w = merged.link("virginia", "tokyo")
    assert w.intf_a.startswith("tbaaaa") and w.relay.startswith("tbaaaa") and w.intf_b.startswith("tbbbbb")
    tokyo_router = merged.router("tokyo").node
    assert {r.node for r in merged.routes} == {merged.router(dc).node for dc in SPLIT}
    assert all(r.dev.startswith("tbbbbb") for r in merged.routes if r.node == tokyo_router)
    # Addresses follow from positions, never from run ids.
    assert [h.ip for h in merged.hosts] == [h.ip for h in plans["A"].hosts]


def test_event_times_move_by_the_offset_and_a_torn_line_stays(tmp_path):
    path = tmp_path / "tokyo-w0.jsonl"
    path.write_text(json.dumps({"t": 100.5, "ev": "start"}) + "\n" + json.dumps({"ev": "x"}) + "\n" + '{"t": 1')
    shift_times(str(path), -2.25)
    lines = path.read_text().splitlines(keepends=True)
    assert json.loads(lines[0]) == {"t": 98.25, "ev": "start"} and json.loads(lines[1]) == {"ev": "x"}
    assert lines[2] == '{"t": 1'


def test_a_machines_files_cannot_land_outside_the_run_folder(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"x"
        info = tarfile.TarInfo("../outside.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(tarfile.TarError):
        unpack(buf.getvalue(), str(run))
    assert not (tmp_path / "outside.txt").exists()


class AheadPart(node.Part):
    """A machine whose clock reads 5 s ahead of this one's."""

    def clock(self):
        return time.monotonic() + 5.0


def test_a_machines_clock_offset_is_read_within_half_the_least_round_trip():
    port = free_port()
    announce = io.StringIO()
    server = threading.Thread(target=node.serve, args=("M", "127.0.0.1", port, announce),
                              kwargs={"part": AheadPart("M")}, daemon=True)
    server.start()
    m = Machine("M", "127.0.0.1", port)
    try:
        offset, within = m.offset()
        assert within > 0 and abs(offset - 5.0) <= within
        assert m.call("hello")["machine"] == "M"
    finally:
        m.call("exit")
        m.close()
        server.join(timeout=10)
    assert not server.is_alive()
    assert json.loads(announce.getvalue())["port"] == port


def test_two_machines_agree_on_a_topology_only_when_they_read_it_alike():
    spec = quickstart()
    moved = dataclasses.replace(spec, source="/elsewhere/quickstart.yaml")
    assert spec_digest(moved) == spec_digest(spec)
    faster = dataclasses.replace(spec, lan=dataclasses.replace(spec.lan, rate=spec.lan.rate / 2))
    assert spec_digest(faster) != spec_digest(spec)


def test_a_crossing_link_gives_the_underlays_lag_back_never_below_its_jitter():
    spec = quickstart()
    share = Share("B", frozenset({"tokyo"}), (Tunnel(1, 1025, "192.0.2.2", "192.0.2.1", lag=0.0005),))
    lagged = lagged_spec(spec, share)
    # virginia-tokyo, 40 ms each way, crosses: 39.5 ms plus the underlay's 0.5 ms.
    assert lagged.wan[1].ab.delay == pytest.approx(0.0395) and lagged.wan[1].ba.delay == pytest.approx(0.0395)
    assert lagged.wan[0] == spec.wan[0] and lagged.wan[2] == spec.wan[2]
    assert lagged.wan[1].ab.queue == spec.wan[1].ab.queue      # the queue the configured link has
    jittery = dataclasses.replace(spec.wan[1].ab, delay=0.002, jitter=0.0018)
    assert lagged_direction(jittery, 0.0005).delay == pytest.approx(0.0018)
