import textwrap

import pytest

from testbed import spec as S
from testbed.spec import topology

BASE = """
datacenters:
  - {name: east, workers: 2, servers: 1}
  - {name: west, workers: 2}
  - {name: north, workers: 1}
wan:
  - {between: [east, west], bw: 50mbit, delay: 20ms}
  - {between: [west, north], bw: 20mbit, delay: 40ms}
"""


def load(text):
    return S.loads(textwrap.dedent(text))


def error_of(text):
    with pytest.raises(S.SpecError) as e:
        load(text)
    return e.value


def test_a_valid_file_resolves_units_into_numbers():
    spec = load(BASE)
    link = spec.link("east", "west")
    assert link.ab.rate == 50e6 and link.ab.delay == 0.02
    assert spec.dc("east").hosts == ["east-s0", "east-w0", "east-w1"]
    assert spec.dc("west").compute == (1.0, 1.0)
    # Default queue: one round-trip BDP, 50e6/8 * 0.04 s = 250 kB.
    assert link.ab.queue == 250_000


def test_the_hosts_tcp_is_left_as_the_kernel_has_it_unless_the_file_sets_it():
    from testbed.emulation.network import tcp_settings
    assert load(BASE).tcp.slow_start_after_idle is None and tcp_settings(load(BASE)) == []
    for value, assignment in (("false", "net.ipv4.tcp_slow_start_after_idle=0"),
                              ("true", "net.ipv4.tcp_slow_start_after_idle=1")):
        spec = load(BASE + f"tcp: {{slow_start_after_idle: {value}}}\n")
        assert tcp_settings(spec) == [assignment]


def test_direction_overrides_make_asymmetric_links():
    spec = load(BASE.replace("{between: [east, west], bw: 50mbit, delay: 20ms}",
                             "{between: [east, west], bw: 50mbit, delay: 20ms, "
                             "reverse: {bw: 10mbit, loss: 1%}}"))
    link = spec.link("east", "west")
    assert (link.ab.rate, link.ab.loss) == (50e6, 0.0)
    assert (link.ba.rate, link.ba.loss, link.ba.delay) == (10e6, 0.01, 0.02)


@pytest.mark.parametrize("queue,expected", [(100, 100 * 1514), ("256kb", 256_000),
                                            ("2bdp", 500_000)])
def test_queue_as_frames_bytes_or_bdps(queue, expected):
    spec = load(BASE.replace("delay: 20ms}", f"delay: 20ms, queue: {queue}}}", 1))
    assert spec.link("east", "west").ab.queue == expected


def test_a_tiny_bdp_still_gets_a_few_dozen_frames_of_queue():
    spec = load(BASE.replace("bw: 50mbit, delay: 20ms", "bw: 1mbit, delay: 1ms"))
    assert spec.link("east", "west").ab.queue == topology.MIN_QUEUE_PACKETS * 1514


def test_a_live_change_rescales_a_bdp_queue_but_not_a_fixed_one():
    spec = load(BASE)
    d = spec.link("east", "west").ab.changed(rate=5e6)
    assert d.queue == 32 * 1514  # 5e6/8*0.04 = 25 kB, below the 32-frame floor
    fixed = load(BASE.replace("delay: 20ms}", "delay: 20ms, queue: 300kb}", 1))
    assert fixed.link("east", "west").ab.changed(rate=5e6).queue == 300_000


def test_a_preset_fills_rate_and_delay_from_measured_data():
    spec = load("""
        datacenters: [{name: virginia, workers: 1}, {name: frankfurt, workers: 1}]
        wan: [{preset: aws/Virginia-Frankfurt}]
    """)
    link = spec.wan[0]
    assert (link.a, link.b) == ("virginia", "frankfurt")
    # aws-regions.csv: 90 ms round trip, 1.02 Gbit/s; default scale 0.05.
    assert link.ab.delay == pytest.approx(0.045)
    assert link.ab.rate == pytest.approx(1.02e9 * 0.05)


def test_explicit_values_beat_the_preset():
    spec = load("""
        preset_bw_scale: 0.1
        datacenters: [{name: us, workers: 1}, {name: eu, workers: 1}]
        wan: [{preset: aws/Virginia-Frankfurt, between: [us, eu], delay: 10ms}]
    """)
    assert spec.wan[0].ab.delay == 0.01
    assert spec.wan[0].ab.rate == pytest.approx(1.02e8)


# Every mistake: one message that names the YAML path.
@pytest.mark.parametrize("text,path,words", [
    ("datacenters: [", "", "not valid YAML: line"),
    (BASE + "wan: []\n", "", "not valid YAML: line 9, column 1: duplicate key 'wan'"),
    ("- a\n- b\n", "", "must be a mapping"),
    (BASE + "experimnt: {}\n", "experimnt", "did you mean 'experiment'"),
    (BASE.replace("workers: 2, servers: 1", "wrokers: 2"), "datacenters[0].wrokers",
     "did you mean 'workers'"),
    (BASE.replace("bw: 50mbit", "rate: 50mbit"), "wan[0].rate", "did you mean 'bw'"),
    (BASE.replace("bw: 20mbit", "bw: '50 mbps'"), "wan[1].bw", "'50 mbps' is not a rate like 50mbit"),
    (BASE.replace("delay: 20ms", "delay: 20"), "wan[0].delay", "is not a time like 40ms"),
    (BASE.replace("bw: 50mbit", "bw: 0mbit"), "wan[0].bw", "above zero"),
    (BASE.replace("bw: 50mbit", "bw: -5mbit"), "wan[0].bw", "not a rate"),
    (BASE.replace("delay: 20ms}", "delay: 20ms, loss: 100%}"), "wan[0].loss", "below 100%"),
    (BASE.replace("delay: 20ms}", "delay: 20ms, jitter: 30ms}"), "wan[0].jitter", "larger than the delay"),
    (BASE.replace("delay: 20ms}", "delay: 20ms, forward: {bw: fast}}"), "wan[0].forward.bw", "not a rate"),
    (BASE.replace("delay: 20ms}", "delay: 20ms, queue: 1}"), "wan[0].queue", "out of range"),
    (BASE.replace("name: north", "name: west"), "datacenters[2].name", "already datacenters[1]"),
    (BASE.replace("[west, north]", "[west, nort]"), "wan[1].between[1]", "did you mean 'north'"),
    (BASE.replace("[west, north]", "[west, west]"), "wan[1].between", "two different data centers"),
    (BASE.replace("[west, north]", "[west]"), "wan[1].between", "exactly two"),
    (BASE.replace("  - {between: [west, north], bw: 20mbit, delay: 40ms}\n", ""), "wan",
     "disconnected: north cannot be reached"),
    (BASE + "  - {between: [west, east], bw: 1mbit}\n", "wan[2].between", "already joined by wan[0]"),
    (BASE.replace("name: east", "name: 'dc1;rm -rf /'"), "datacenters[0].name", "not a valid name"),
    (BASE.replace("name: east", "name: abcdefghijklmnopqrst"), "datacenters[0].name", "not a valid name"),
    (BASE.replace("name: east", "name: 'east coast'"), "datacenters[0].name", "not a valid name"),
    (BASE.replace("name: east", "name: East"), "datacenters[0].name", "not a valid name"),
    ("name: 'Bad Name'\n" + BASE, "name", "not a valid name"),
    (BASE.replace("workers: 1}", "workers: -1}"), "datacenters[2].workers",
     "must be a whole number in 0..32"),
    (BASE.replace("workers: 1}", "workers: 1, compute: [1.0, 2.0]}"), "datacenters[2].compute",
     "2 speeds for 1 workers"),
    (BASE.replace("workers: 1}", "workers: 1, compute: 0}"), "datacenters[2].compute", "relative speed"),
    ("datacenters: [{name: a, workers: 1}]\nwan: []\n", "datacenters", "at least two"),
    ("wan: []\n", "datacenters", "missing"),
    (BASE.split("wan:")[0], "wan", "missing"),
    (BASE + "lan: {bw: 0gbit}\n", "lan.bw", "above zero"),
    (BASE + "tcp: {slow_start_after_idle: 0}\n", "tcp.slow_start_after_idle", "not true or false"),
    (BASE + "tcp: {slow_start_idle: false}\n", "tcp.slow_start_idle", "slow_start_after_idle"),
    (BASE + "tcp: off\n", "tcp", "must be a mapping"),
    (BASE.replace("{between: [east, west], bw: 50mbit, delay: 20ms}", "{preset: aws/Mars-Venus}"),
     "wan[0].preset", "aws has no link Mars-Venus"),
    (BASE.replace("bw: 20mbit, ", ""), "wan[1].bw", "missing"),
])
def test_each_mistake_is_one_message_naming_its_yaml_path(text, path, words):
    err = error_of(text)
    assert err.path == path
    assert words in str(err)
    assert "\n" not in str(err)
    if path:
        assert str(err).startswith(f"{path}: ")


def test_a_yaml_alias_bomb_is_refused_quickly():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    prev = "a"
    for i in range(12):
        name = f"b{i}"
        bomb += f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
        prev = name
    err = error_of(bomb)
    assert "alias bomb" in str(err)


def test_load_reports_a_missing_file_in_one_line(tmp_path):
    with pytest.raises(S.SpecError, match="no such file"):
        S.load(str(tmp_path / "nope.yaml"))


def test_the_shipped_topologies_are_valid():
    import glob
    import os
    files = glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "topologies", "*.yaml"))
    assert len(files) >= 3
    for f in files:
        S.load(f)
