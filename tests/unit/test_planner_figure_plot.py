"""The planner-figure recipe's plot: the planner's plan held against the links
as they were while each synchronization ran, on hand-made numbers and a
hand-built run folder."""

import json
import os

import pytest

from tests.recipe_plot import load_plot

WALL0 = 1_800_000_000.0
PAYLOAD = 1448 / 1514
TOPO = """
datacenters: [{name: a, servers: 1, workers: 1}, {name: b, servers: 1, workers: 1}]
wan: [{between: [a, b], bw: 8mbit, delay: 0ms}]
"""


@pytest.fixture(scope="module")
def plot():
    return load_plot("planner-figure")


def test_the_gap_of_a_changing_wan_is_the_median_of_each_iterations_own_ratios(plot):
    plans = {1: (1.0, 2.0), 2: (1.0, 4.0), 3: (2.0, 3.0)}
    steady = [(1, 3.0, 1.0), (2, 5.0, 2.0), (3, 6.0, 3.0), (4, 9.0, 1.0)]   # no plan known for 4
    gap = plot.plan_gap_as_run(plans, steady)
    assert gap["plan_over_t_lb"] == pytest.approx(2.0)          # 2, 2, 1
    assert gap["sync_over_plan"] == pytest.approx(1.5)          # 1.5, 1.25, 2
    assert gap["planned_over_t_lb"] == pytest.approx(2 / 3)     # 1, 0.5, 0.67
    assert gap["sync_over_planned"] == pytest.approx(3.0)       # 3, 5, 3
    assert gap["planned_true_s"] == pytest.approx(3.0) and gap["planned_s"] == pytest.approx(1.0)
    assert plot.plan_gap_as_run({}, steady) == {}


def test_pooled_ratios_gather_every_draw_and_run_of_a_system_per_redraw_period(plot):
    series = {("dynamic-2mb", "netstorm"): [(1, 3.0, 1.0), (2, 6.0, 2.0)],
              ("dynamic-2mb-draw1-again", "netstorm"): [(1, 8.0, 2.0)],
              ("dynamic-2mb-dispatch", "planner"): [(1, 2.0, 1.0), (2, 5.0, 2.0)],
              ("dynamic-2mb", "planner"): [(1, 2.8, 1.0)],
              ("dynamic-2mb-steady2", "planner"): [(1, 9.0, 1.0)],
              ("dynamic50-2mb", "planner"): [(1, 1.5, 1.0)],
              ("static-1mb", "netstorm"): [(1, 7.0, 1.0)]}
    assert plot.pooled(series) == {("10 s", "NetStorm"): (3.0, 3),               # 3, 3, 4
                                   ("10 s", "planner"): (2.8, 1),
                                   ("10 s", "planner, dispatched"): (2.25, 2),  # 2, 2.5
                                   ("50 s", "planner"): (1.5, 1)}


def write_lines(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def test_each_iteration_runs_the_plan_released_for_it_on_the_links_while_it_ran(plot, tmp_path):
    run = str(tmp_path)
    os.makedirs(os.path.join(run, "agents"))
    with open(os.path.join(run, "topo.yaml"), "w") as f:
        f.write(TOPO)
    direction = {"rate": 8e6 / PAYLOAD, "delay": 0.0, "jitter": 0.0, "up": True}
    spec = {"datacenters": [{"name": "a", "workers": 1, "servers": 1},
                            {"name": "b", "workers": 1, "servers": 1}],
            "wan": [{"a": "a", "b": "b", "ab": dict(direction), "ba": dict(direction)}]}
    # a->b falls to a quarter (0.25 MB/s) at 100 s.
    changes = [{"wall": WALL0 + 100.0, "src": "a", "dst": "b", "rate": 2e6 / PAYLOAD}]
    # Each plan sends the whole model each way at 1 MB/s, with 0.1 s of latency;
    # the second is released for iteration 2.
    plan = {"ev": "decision", "decision": "release", "rate": 8e6, "latency": 0.1,
            "loads": {"a>b": 8e6, "b>a": 8e6}}
    write_lines(os.path.join(run, "agents", "a-c.jsonl"),
                [{**plan, "it": 0, "wall": WALL0}, {**plan, "it": 2, "wall": WALL0 + 90.0, "latency": 0.3},
                 {"ev": "decision", "decision": "replan", "it": None, "wall": WALL0 + 95.0}])
    # Iteration 1's last worker began at 99.5 (the fall 0.5 s in), iteration 2's at 110.
    iters = [{"it": 1, "wall": WALL0 + 103.0, "sync": 4.0, "wait": 0.5},
             {"it": 2, "wall": WALL0 + 116.0, "sync": 6.0, "wait": 0.0}]
    out = plot.plan_times_as_run(run, spec, changes, iters, 1e6)
    # 1: a->b carries 0.5 MB by the fall and 0.5 MB at 0.25 MB/s: 2.5 s, + 0.1.
    assert out[1] == (pytest.approx(1.1), pytest.approx(2.6))
    # 2: the second plan, on a->b at 0.25 MB/s all along: 4 s, + 0.3.
    assert out[2] == (pytest.approx(1.3), pytest.approx(4.3))
