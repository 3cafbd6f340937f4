"""The beamer-figure recipe's plot: normalization to Beamer, spread over
seeds and CDFs on hand-made numbers; draw() with and without testbed runs."""

import csv
import json
import os

import pytest

from tests.recipe_plot import load_plot

# A search small enough to simulate in well under a second: 2 searches x 4 configs.
SMALL = {"tasks": 2, "configs": 4, "eta": 2, "iterations": 1, "workers": 2, "machines": 6,
         "scale": 0.008, "compute": (0.5, 2.0)}


@pytest.fixture(scope="module")
def plot():
    return load_plot("beamer-figure")


def row(source, seed, policy, avg_sct, lower_bound=None):
    return {"source": source, "seed": seed, "policy": policy, "avg_sct": avg_sct,
            "lower_bound": lower_bound}


def test_each_average_sct_is_divided_by_beamers_of_the_same_source_and_seed(plot):
    table = plot.normalize([
        row("simulator", 0, "beamer", 10.0, 5.0), row("simulator", 0, "fair", 15.0, 5.0),
        row("simulator", 0, "sincronia", 8.0, 5.0),
        row("simulator", 1, "beamer", 20.0), row("simulator", 1, "fair", 25.0),
        # Same seed, other source: its own Beamer, not the simulator's.
        row("testbed", 0, "beamer", 4.0, 2.0), row("testbed", 0, "fair", 6.0, 2.0),
        # No Beamer run for this seed: no ratio.
        row("testbed", 7, "fair", 9.0, 3.0)])
    over = [r["avg_sct_over_beamer"] for r in table]
    assert over[:7] == pytest.approx([1.0, 1.5, 0.8, 1.0, 1.25, 1.0, 1.5])
    assert over[7] is None
    bound = [r["avg_sct_over_bound"] for r in table]
    assert bound[:3] == pytest.approx([2.0, 3.0, 1.6])
    assert bound[3] is None and bound[4] is None
    assert bound[5:] == pytest.approx([2.0, 3.0, 3.0])


def test_spread_gives_mean_min_and_max_over_seeds_per_policy_in_policy_order(plot):
    table = plot.normalize([row("simulator", 0, "beamer", 10.0), row("simulator", 0, "fair", 12.0),
                            row("simulator", 1, "beamer", 10.0), row("simulator", 1, "fair", 16.0),
                            row("testbed", 0, "beamer", 1.0), row("testbed", 0, "fair", 9.0)])
    stats = plot.spread(table, "simulator", "avg_sct_over_beamer")
    assert list(stats) == ["fair", "beamer"]
    assert (stats["fair"]["mean"], stats["fair"]["min"], stats["fair"]["max"]) == \
        pytest.approx((1.4, 1.2, 1.6))
    assert stats["beamer"]["n"] == 2 and stats["beamer"]["mean"] == 1.0


def test_the_cdf_steps_one_over_n_at_each_sorted_value(plot):
    xs, ps = plot.cdf([3.0, 1.0, 2.0, 2.0])
    assert xs == [1.0, 2.0, 2.0, 3.0]
    assert ps == [0.25, 0.5, 0.75, 1.0]


def read_table(out):
    with open(out / "table.csv") as f:
        return list(csv.DictReader(f))


def test_without_testbed_runs_draw_still_writes_the_figure_and_the_simulator_rows(plot, tmp_path):
    rows = [{"search.policy": p, "run": None, "status": "failed"} for p in plot.POLICIES]
    files = plot.draw(rows, str(tmp_path), None, scale=SMALL, seeds=(0, 1))
    assert sorted(os.path.basename(f) for f in files) == ["figure.png", "table.csv"]
    assert (tmp_path / "figure.png").stat().st_size > 10_000
    table = read_table(tmp_path)
    assert [(r["source"], r["seed"], r["policy"]) for r in table] == \
        [("simulator", str(s), p) for s in (0, 1) for p in plot.POLICIES]
    for r in table:
        # No schedule beats the bound; every ratio is Beamer's of the same seed.
        assert float(r["avg_sct_over_bound"]) >= 1.0
        assert float(r["avg_sct"]) == pytest.approx(float(r["avg_sct_over_bound"])
                                                     * float(r["lower_bound"]), rel=1e-3)
    assert {r["avg_sct_over_beamer"] for r in table if r["policy"] == "beamer"} == {"1"}


def a_run(folder, policy, avg_sct, sct, seed=3):
    os.makedirs(folder)
    summary = {"search": {"policy": policy, "avg_sct": avg_sct, "avg_cct": avg_sct / 4,
                          "sct": sct, "cct": [1.0], "makespan": {"t0": 2 * avg_sct, "t1": 4.0},
                          "lower_bound": {"avg_sct": 2.0, "avg_cct": 0.5}}}
    spec = {"lan": {"rate": 100e6},
            "search": {"dc": "c", "machines": ["c-w0", "c-w1", "c-w2"],
                       "params": {"tasks": 2, "configs": 2, "eta": 2, "workers": 2, "seed": seed,
                                  "machines": 3}}}
    for name, data in (("summary.json", summary), ("spec.json", spec)):
        with open(os.path.join(folder, name), "w") as f:
            json.dump(data, f)
    return str(folder)


def test_testbed_runs_become_rows_normalized_to_the_beamer_run(plot, tmp_path):
    rows = [{"search.policy": "fair", "run": a_run(tmp_path / "fair", "fair", 6.0, {"t0/s0": 6.0}),
             "status": "completed"},
            {"search.policy": "beamer",
             "run": a_run(tmp_path / "beamer", "beamer", 4.0, {"t0/s0": 3.0, "t0/s1": 5.0}),
             "status": "completed"},
            {"search.policy": "sincronia", "run": None, "status": "failed"}]
    table, scts = plot.testbed_part(rows)
    assert scts == {"fair": [6.0], "beamer": [3.0, 5.0]}
    assert [(r["policy"], r["seed"], r["makespan"]) for r in table] == \
        [("fair", 3, 8.0), ("beamer", 3, 6.0)]
    out = tmp_path / "out"
    out.mkdir()
    plot.draw(rows, str(out), None, scale=SMALL, seeds=(0,))
    bed = [r for r in read_table(out) if r["source"] == "testbed"]
    assert [(r["policy"], r["avg_sct_over_beamer"], r["avg_sct_over_bound"]) for r in bed] == \
        [("fair", "1.5", "3"), ("beamer", "1", "2")]
    assert plot.testbed_setting(rows) == ("testbed: 2 searches x 2 configs, eta 2, PS + 2 workers per "
                                          "job, 3 hosts with 100 Mbit/s NICs")
