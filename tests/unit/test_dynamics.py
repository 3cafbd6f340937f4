import os
import textwrap

import pytest

from testbed import spec as S
from testbed.run.dynamics import Engine
from testbed.spec import dynamics as D

TOPOLOGIES = os.path.join(os.path.dirname(__file__), "..", "..", "topologies")
BASE = """
datacenters:
  - {name: a, workers: 2}
  - {name: b, workers: 1}
wan:
  - {between: [a, b], bw: 20mbit, delay: 10ms}
dynamics:
"""


def load(text, source=""):
    return S.loads(textwrap.dedent(BASE) + textwrap.indent(textwrap.dedent(text), "  "),
                   source=source)


def test_square_wave_alternates_high_then_low_every_half_period():
    assert D.square(low=5, high=20, period=10, start=2, until=17) == [
        (2, {"rate": 20}), (7, {"rate": 5}), (12, {"rate": 20}), (17, {"rate": 5})]


def test_step_holds_then_switches():
    assert D.step(start=0, at=30, before=20e6, after=5e6, until=100) == [
        (0, {"rate": 20e6}), (30, {"rate": 5e6})]


def test_random_walk_is_seeded_bounded_and_exact():
    walk = D.random_walk(low=10, high=30, step_size=10, every=1, seed=7, until=6)
    # random.Random(7).choice((-10, 10)) draws +10, -10, +10, -10, -10, -10: from the
    # middle (20): 30, 20, 30, 20, 10, then 0 is held at the floor, 10.
    assert [v["rate"] for _, v in walk] == [20, 30, 20, 30, 20, 10, 10]
    assert walk == D.random_walk(low=10, high=30, step_size=10, every=1, seed=7, until=6)
    assert [t for t, _ in walk] == [0, 1, 2, 3, 4, 5, 6]


def test_uniform_redraws_every_period_within_the_band_and_follows_the_seed():
    draws = D.uniform(low=20e6, high=155e6, every=180, seed=3, start=10, until=400)
    assert [t for t, _ in draws] == [10, 190, 370]
    rng = __import__("random").Random(3)     # the same seed, the same draws
    assert [v["rate"] for _, v in draws] == [rng.uniform(20e6, 155e6) for _ in range(3)]
    assert all(20e6 <= v["rate"] <= 155e6 for _, v in D.uniform(20e6, 155e6, 1, seed=9, until=500))
    assert draws != D.uniform(low=20e6, high=155e6, every=180, seed=4, start=10, until=400)


def test_traces_read_units_and_skip_the_source_line(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("# source: made up\ntime_s,bw,delay,loss\n0,20mbit,40ms,0%\n2.5,5mbit,,1%\n")
    assert D.read_trace(str(f)) == [(0.0, {"rate": 20e6, "delay": 0.04, "loss": 0.0}),
                                    (2.5, {"rate": 5e6, "loss": 0.01})]
    assert D.trace_period(D.read_trace(str(f))) == 5.0


@pytest.mark.parametrize("rows,msg", [("0,fast\n", "bad.csv line 1, column 2: bw is not a rate"),
                                      ("# c\n0,1mbit\n0,2mbit\n", "line 3, column 1: times must"),
                                      ("0,1mbit,soon\n", "line 1, column 3: delay is not a time"),
                                      ("0,1mbit,,most\n", "line 1, column 4: loss is not a share"),
                                      ("nan,1mbit\n", "line 1, column 1: time_s is not a time"),
                                      ("0\n", "line 1: expected time_s,bw"),
                                      ("0,0mbit\n", "column 2: bw must be above zero"),
                                      ("", "has no rows")])
def test_bad_traces_say_which_line_and_column(tmp_path, rows, msg):
    f = tmp_path / "bad.csv"
    f.write_text(rows)
    with pytest.raises(D.TraceError, match=msg):
        D.read_trace(str(f))


@pytest.mark.parametrize("content", ["s3cret:x:0\n", "0,s3cret\n", "0,1mbit,s3cret\n",
                                     "0,1mbit\ns3cret,1mbit\n", "0,1mbit,1ms,s3cret\n"])
def test_a_trace_error_never_shows_what_the_file_holds(tmp_path, content):
    # Root reads the trace: a file named by mistake (or on purpose) must not leak.
    f = tmp_path / "private"
    f.write_text(content)
    with pytest.raises(D.TraceError) as e:
        D.read_trace(str(f))
    assert "s3cret" not in str(e.value) and "\n" not in str(e.value)


def _read_in_thread(path):
    """read_trace's outcome, or None if it is still reading after a while."""
    import threading
    outcome = []

    def read():
        try:
            outcome.append(D.read_trace(path))
        except D.TraceError as e:
            outcome.append(e)
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(30)
    return outcome[0] if outcome else None


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    outcome = _read_in_thread(str(fifo))
    assert isinstance(outcome, D.TraceError) and "is a named pipe, not a text file" in str(outcome)


@pytest.mark.parametrize("path,kind", [("/dev/zero", "a device"), ("/dev/urandom", "a device"),
                                       ("/", "a folder")])
def test_devices_and_folders_are_refused_without_reading(path, kind):
    outcome = _read_in_thread(path)
    assert isinstance(outcome, D.TraceError) and f"is {kind}" in str(outcome)


def test_a_huge_trace_is_refused_without_reading_it(tmp_path):
    f = tmp_path / "huge.csv"
    with open(f, "wb") as out:
        out.truncate(D.MAX_TRACE_BYTES + 1)   # sparse: costs no disk
    with pytest.raises(D.TraceError, match="over 1024 KiB"):
        D.read_trace(str(f))


@pytest.mark.parametrize("data,words", [(b"0,1mbit\x00\n", "not a text file"),
                                        (b"0,1mbit\xff\n", "not UTF-8 text")])
def test_a_binary_trace_is_refused(tmp_path, data, words):
    f = tmp_path / "bin.csv"
    f.write_bytes(data)
    with pytest.raises(D.TraceError, match=words):
        D.read_trace(str(f))


def test_a_schedule_of_millions_of_changes_is_refused_before_it_is_expanded():
    text = textwrap.dedent(BASE).replace("workers: 2}", "workers: 2, servers: 1}").replace(
        "dynamics:\n", "experiment: {workload: synthetic, stop: {time: 10min}}\ndynamics:\n")
    ok = S.loads(text + "  - {generator: square, link: [a, b], low: 1mbit, high: 2mbit, period: 1s}\n")
    # 600 s / 0.5 s per change, plus the first: 1201.
    assert ok.dynamics[0].count(600) == 1201 == len(ok.dynamics[0].actions(600))
    with pytest.raises(S.SpecError) as e:
        S.loads(text + "  - {generator: square, link: [a, b], low: 1mbit, high: 2mbit, period: 1us}\n")
    assert e.value.path == "dynamics[0]" and "makes 1200000001 changes" in str(e.value)


def test_a_looped_trace_repeats_until_the_horizon(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("0,20mbit\n10,5mbit\n")
    spec = load(f"- {{trace: {f}, link: [a, b], loop: true, start: 5s}}\n")
    actions = spec.dynamics[0].actions(until=45)
    assert [(a.t, a.rate) for a in actions] == [(5, 20e6), (15, 5e6), (25, 20e6), (35, 5e6), (45, 20e6)]
    assert all(isinstance(a, D.LinkAction) and a.both for a in actions)


def test_timed_link_speed_and_cut_events():
    spec = load("""
    - {at: 30s, link: [b, a], direction: forward, bw: 5mbit, delay: 80ms}
    - {at: 40s, link: [a, b], down: true}
    - {at: 45s, link: [a, b], up: true}
    - {at: 20s, worker: a-w1, speed: 0.3}
    - {at: 25s, dc: a, speed: 2}
    - {generator: square, dc: b, low: 0.5, high: 1.0, period: 20s}
    """)
    first = spec.dynamics[0].actions(100)[0]
    assert (first.t, first.a, first.b, first.both, first.changes()) == \
        (30, "b", "a", False, {"rate": 5e6, "delay": 0.08})
    assert spec.dynamics[1].actions(100)[0].changes() == {"up": False}
    assert spec.dynamics[2].actions(100)[0].changes() == {"up": True}
    assert spec.dynamics[3].actions(100)[0] == D.SpeedAction(20, ("a-w1",), 0.3)
    assert spec.dynamics[4].actions(100)[0] == D.SpeedAction(25, ("a-w0", "a-w1"), 2.0)
    assert [(a.t, a.speed) for a in spec.dynamics[5].actions(30)] == [(0, 1.0), (10, 0.5), (20, 1.0),
                                                                      (30, 0.5)]


@pytest.mark.parametrize("entry,path,words", [
    ("- {at: 30s, link: [a, c], bw: 5mbit}\n", "dynamics[0].link", "no WAN link between a and c"),
    ("- {at: 30s, link: [a, b], bw: 5 mbit}\n", "dynamics[0].bw", "not a rate"),
    ("- {at: 30, link: [a, b], bw: 5mbit}\n", "dynamics[0].at", "not a time"),
    ("- {at: 30s, link: [a, b]}\n", "dynamics[0]", "says when but not what"),
    ("- {at: 30s, link: [a, b], speed: 2}\n", "dynamics[0].speed", "unknown key"),
    ("- {at: 30s, worker: a-w9, speed: 0.5}\n", "dynamics[0].worker", "unknown worker 'a-w9'"),
    ("- {at: 30s, bw: 5mbit}\n", "dynamics[0]", "says what changes nowhere"),
    ("- {link: [a, b], bw: 5mbit}\n", "dynamics[0]", "exactly one of at, trace or generator"),
    ("- {generator: sine, link: [a, b]}\n", "dynamics[0].generator", "unknown generator 'sine'"),
    ("- {generator: square, link: [a, b], low: 5mbit, period: 10s}\n", "dynamics[0].high", "missing"),
    ("- {generator: random_walk, link: [a, b], low: 5mbit, high: 1mbit, step: 1mbit, every: 1s}\n",
     "dynamics[0].high", "above low"),
    ("- {trace: nowhere.csv, link: [a, b]}\n", "dynamics[0].trace", "cannot read trace"),
    ("- {at: 1s, link: [a, b], direction: backward, bw: 1mbit}\n", "dynamics[0].direction",
     "unknown direction 'backward'; available: both, forward"),
    ("- {at: 1s, link: [a, b], loss: 100%}\n", "dynamics[0].loss", "below 100%"),
])
def test_each_dynamics_mistake_names_its_path(entry, path, words):
    with pytest.raises(S.SpecError) as e:
        load(entry)
    assert e.value.path == path
    assert words in str(e.value)


def test_the_shipped_traces_say_where_they_come_from():
    folder = os.path.join(TOPOLOGIES, "traces")
    files = [f for f in os.listdir(folder) if f.endswith(".csv")]
    assert len(files) >= 3
    for f in files:
        first = open(os.path.join(folder, f)).readline()
        assert first.startswith("# source:"), f
        assert D.read_trace(os.path.join(folder, f))


def test_the_engine_fires_actions_in_time_order():
    import threading
    fired, done = [], threading.Event()

    def link(a):
        fired.append(("link", a.t))

    def speed(a):
        fired.append(("speed", a.t))
        done.set()

    engine = Engine(link, speed)
    engine.run([D.Schedule("at", ("speed", ("w",)), ((0.2, {"speed": 1.0}),)),
                D.Schedule("at", ("link", "a", "b", True), ((0.1, {"rate": 1e6}),))], horizon=10)
    assert done.wait(5)
    engine.stop()
    assert fired == [("link", 0.1), ("speed", 0.2)]
