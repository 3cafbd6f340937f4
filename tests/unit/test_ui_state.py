"""The run page's data, built from a hand-made run folder: two DCs a and b,
one 10 Mbit/s link, samples a second apart, one change of b -> a to
2 Mbit/s.  Monotonic times are wall times less 1000 s."""

import json

import pytest

from testbed.ui import page, state

OFFSET = 1000.0


def write_lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def direction(rate):
    return {"rate": rate, "delay": 0.02, "jitter": 0.0, "loss": 0.0, "queue": 50000, "up": True}


def event(agent, t, ev, **fields):
    return {"t": t, "wall": t + OFFSET, "agent": agent, "ev": ev, **fields}


PLAN = {"size": 10, "contributors": ["a-w0", "b-w0"], "pieces": [
    {"start": 0, "stop": 6, "root": "a-s0", "parent": {"a-w0": "a-s0", "b-w0": "a-s0"},
     "children": {"a-s0": ["a-w0", "b-w0"]}},
    {"start": 6, "stop": 10, "root": "b-s0", "parent": {"a-w0": "b-s0", "b-w0": "b-s0"},
     "children": {"b-s0": ["a-w0", "b-w0"]}}]}


@pytest.fixture
def run(tmp_path):
    (tmp_path / "agents").mkdir()
    spec = {"name": "pair",
            "datacenters": [{"name": "a", "workers": 1, "servers": 1, "compute": []},
                            {"name": "b", "workers": 1, "servers": 1, "compute": []}],
            "wan": [{"a": "a", "b": "b", "ab": direction(10e6), "ba": direction(10e6)}],
            "experiment": {"max_iterations": 50, "target_accuracy": 0.9}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "status.json").write_text(json.dumps({"status": "completed"}))
    write_lines(tmp_path / "runner.jsonl", [event("runner", 99.0, "network_up")])
    # a -> b sends 625 000 bytes a second (5 Mbit/s), b -> a 125 000 (1 Mbit/s).
    write_lines(tmp_path / "link_samples.jsonl",
                [{"t": 100.0 + i, "src": src, "dst": dst, "rate": 10e6, "up": True,
                  "bytes": i * per_second}
                 for i in range(3) for src, dst, per_second in (("a", "b", 625000),
                                                                ("b", "a", 125000))])
    write_lines(tmp_path / "links.jsonl",
                [{"t": 2.5, "wall": 101.5 + OFFSET, "src": "b", "dst": "a", **direction(2e6),
                  "source": "ui"}])
    write_lines(tmp_path / "speeds.jsonl",
                [{"t": 1.0, "wall": 101.0 + OFFSET, "workers": ["a-w0"], "speed": 0.5,
                  "source": "ui"}])
    write_lines(tmp_path / "agents" / "a-w0.jsonl", [
        event("a-w0", 100.0, "start", role="worker", dc="a", params=1000),
        event("a-w0", 100.1, "plan", overlay="ps", plan=PLAN),
        event("a-w0", 100.5, "iter", it=0, sync=0.2),
        event("a-w0", 100.6, "eval", accuracy=0.5, loss=1.0),
        event("a-w0", 101.5, "iter", it=1, sync=0.4),
        event("a-w0", 101.6, "eval", accuracy=0.8, loss=0.5)])
    write_lines(tmp_path / "agents" / "b-p.jsonl", [
        event("b-p", 101.0, "estimate", src="a", dst="b", bw=4.8e6)])
    return str(tmp_path)


def by_direction(s):
    return {(link["src"], link["dst"]): link for link in s["links"]}


def test_a_link_at_10_mbit_carrying_5_is_half_used_and_shows_its_probe_estimate(run):
    links = by_direction(state.state(state.read(run)))
    ab = links[("a", "b")]
    assert ab["rate"] == 10e6
    assert ab["throughput"] == pytest.approx(5e6)
    assert ab["utilisation"] == pytest.approx(0.5)
    assert ab["estimate"] == 4.8e6


def test_the_configured_rate_follows_the_link_changes_in_time(run):
    reader = state.read(run)
    before = by_direction(state.state(reader, t=101.2))[("b", "a")]
    after = by_direction(state.state(reader))[("b", "a")]
    # 1 Mbit/s over 10 configured, then over the 2 set at 101.5.
    assert (before["rate"], before["utilisation"]) == (10e6, pytest.approx(0.1))
    assert (after["rate"], after["utilisation"]) == (2e6, pytest.approx(0.5))


def test_the_live_network_s_settings_win_over_the_recorded_changes(run):
    from testbed.spec import Direction
    current = {("a", "b"): Direction(rate=20e6, delay=0.03), ("b", "a"): Direction(rate=1e6, delay=0.02)}
    links = by_direction(state.state(state.read(run), current=current, now=104.0))
    assert links[("a", "b")]["rate"] == 20e6 and links[("a", "b")]["delay"] == 0.03
    assert links[("a", "b")]["utilisation"] == pytest.approx(0.25)
    assert links[("b", "a")]["utilisation"] == pytest.approx(1.0)


def test_progress_and_speeds_at_a_time_and_at_the_end(run):
    reader = state.read(run)
    early, end = state.state(reader, t=100.7), state.state(reader)
    assert early["progress"]["iteration"] == 1 and early["progress"]["accuracy"] == 0.5
    assert early["speeds"] == {"a-w0": 1.0, "b-w0": 1.0}
    assert end["progress"]["iteration"] == 2 and end["progress"]["accuracy"] == 0.8
    # The steady sync time leaves the first iteration out.
    assert end["progress"]["sync"] == 0.4
    assert end["progress"]["history"] == [[pytest.approx(1.6), 0.5], [pytest.approx(2.6), 0.8]]
    assert end["speeds"] == {"a-w0": 0.5, "b-w0": 1.0}
    # From the network's start (99) to the last record (102).
    assert end["elapsed"] == pytest.approx(3.0)


def test_a_static_plan_gives_each_root_its_trees_and_its_share_of_the_model(run):
    plan = state.state(state.read(run))["plan"]
    assert plan["overlay"] == "ps" and plan["why"] == "the static plan of ps"
    roots = {t["root"]: t for t in plan["trees"]}
    assert roots["a-s0"]["share"] == pytest.approx(0.6) and roots["b-s0"]["share"] == pytest.approx(0.4)
    assert roots["b-s0"]["aggregation"] == [("a-w0", "b-s0"), ("b-w0", "b-s0")]
    assert roots["b-s0"]["distribution"] == [("b-s0", "a-w0"), ("b-s0", "b-w0")]
    assert plan["changed_at"] == pytest.approx(1.1)


def test_an_adaptive_plan_is_the_last_release_or_replan_and_says_why():
    events = [
        {"t": 10.0, "ev": "start", "overlay": "netstorm"},
        {"t": 10.0, "ev": "decision", "decision": "release", "it": 0, "version": 0,
         "roots": {"a": 0.7, "b": 0.3}},
        {"t": 20.0, "ev": "decision", "decision": "replan", "version": 1, "change": 0.25,
         "roots": {"a": 0.5, "b": 0.5}}]
    plan = state.plan_state(events, start=5.0)
    assert plan["overlay"] == "netstorm"
    assert plan["why"] == "version 1 re-planned: link speeds moved by 25%"
    assert plan["changed_at"] == 15.0
    assert [(t["root"], t["share"]) for t in plan["trees"]] == [("a", 0.5), ("b", 0.5)]
    assert state.plan_state(events[:2], start=5.0)["why"] == "version 0 released at iteration 0"


def test_the_planner_s_decisions_show_its_trees_not_only_its_roots():
    trees = [{"root": "a", "share": 0.6, "aggregation": [["b", "a"]], "distribution": [["a", "b"]]},
             {"root": "b", "share": 0.4, "aggregation": [["a", "b"]], "distribution": [["b", "a"]]}]
    events = [{"t": 10.0, "ev": "start", "overlay": "optimal"},
              {"t": 12.0, "ev": "decision", "decision": "release", "it": 3, "version": 1,
               "roots": {"a": 0.6, "b": 0.4}, "trees": trees}]
    assert state.plan_state(events, start=5.0)["trees"] == trees


def test_the_replay_has_a_frame_a_second_and_ends_at_the_last_state(run):
    frames = state.replay(run)["frames"]
    assert [f["elapsed"] for f in frames] == [0.0, 1.0, 2.0, 3.0]
    assert by_direction(frames[-1])[("b", "a")]["rate"] == 2e6
    assert by_direction(frames[1])[("b", "a")]["rate"] == 10e6
    assert frames[-1]["progress"]["history"] and not frames[0]["progress"]["history"]


def test_the_report_page_inlines_everything_and_opens_at_the_last_frame(run):
    path = page.write_report(run)
    with open(path) as f:
        text = f.read()
    assert "<script src" not in text and "<link" not in text
    # The one address in it names SVG's namespace; nothing is fetched.
    assert text.count("http") == text.count("http://www.w3.org/2000/svg") == 1
    config = json.loads(text.split('<script id="config" type="application/json">')[1]
                        .split("</script>")[0])
    assert config["mode"] == "replay" and len(config["replay"]["frames"]) == 4
