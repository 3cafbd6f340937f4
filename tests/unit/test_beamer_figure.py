"""The beamer-figure recipe's plot: the testbed's table from hand-made run
records (per-seed ratios to Beamer, the stage columns), the simulator's
rows, and draw() writing both with and without testbed runs."""

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


def a_record(where, label, policy, seed, sct, bound=2.0):
    folder = where / label
    folder.mkdir(parents=True)
    (folder / "setting.json").write_text(json.dumps({"search.seed": seed, "variant": {"name": policy}}))
    search = {"policy": policy, "avg_sct": sum(sct.values()) / len(sct), "avg_cct": 1.0,
              "sct": sct, "makespan": {"t0": 10.0, "t1": 20.0}, "lower_bound": {"avg_sct": bound}}
    (folder / "summary.json").write_text(json.dumps({"search": search}))


def test_the_testbed_table_pairs_each_seed_with_beamers_and_averages_each_stage(plot, tmp_path):
    # Average SCTs: Beamer 4 and 5 (seeds 0, 1); Sincronia 6 and 4.
    a_record(tmp_path, "b0", "beamer", 0, {"t0/s0": 2.0, "t0/s1": 6.0, "t1/s0": 4.0})
    a_record(tmp_path, "b1", "beamer", 1, {"t0/s0": 5.0})
    a_record(tmp_path, "s0", "sincronia", 0, {"t0/s0": 6.0, "t1/s0": 6.0})
    a_record(tmp_path, "s1", "sincronia", 1, {"t0/s0": 4.0}, bound=1.0)
    (tmp_path / "failed.json").write_text(json.dumps([{"label": "f", "setting": {
        "search.seed": 2, "variant": {"name": "sincronia"}}}]))
    rows = {r["policy"]: r for r in plot.table(str(tmp_path))}
    assert list(rows) == ["sincronia", "beamer"]
    sin, beamer = rows["sincronia"], rows["beamer"]
    assert (sin["over_beamer_min"], sin["over_beamer_median"], sin["over_beamer_max"]) == \
        (pytest.approx(0.8), pytest.approx(1.15), pytest.approx(1.5))
    assert beamer["over_beamer_median"] == 1 and sin["failed"] == 1 and sin["runs"] == 2
    # Beamer's stage 1: seed 0 averages 2 and 4 (3), seed 1 has 5: median 4.
    assert beamer["stage1_sct_median_s"] == 4.0 and beamer["stage2_sct_median_s"] == 6.0
    assert beamer["stage3_sct_median_s"] is None
    assert sin["over_bound_median"] == pytest.approx(3.5)        # 6 / 2 and 4 / 1
    assert beamer["makespan_median_s"] == 15.0


def test_a_stage_number_counts_from_one(plot):
    assert plot.stage_number("t3/s0") == 1 and plot.stage_number(("t0", "s4")) == 5


def test_the_simulated_rows_never_beat_the_bound_and_beamer_is_its_own_baseline(plot):
    rows = plot.simulated(SMALL, seeds=(0, 1), gaps=(0.0, 5.0))
    assert [(r["task_gap_s"], r["policy"]) for r in rows] == \
        [(gap, p) for gap in (0.0, 5.0) for p in plot.POLICIES]
    for r in rows:
        assert r["avg_sct_min_s"] >= r["lower_bound_s"] * (1 - 1e-9)
        assert r["runs"] == 2 and r["stage1_sct_median_s"] > 0
    assert {r["over_beamer_median"] for r in rows if r["policy"] == "beamer"} == {1.0}
    # The alternatives are other orders: some differ from Beamer's on these searches.
    together = {r["policy"]: r["avg_sct_median_s"] for r in rows if r["task_gap_s"] == 0.0}
    assert len({together[p] for p in ("beamer", "beamer-jobs", "beamer-next", "beamer-coflows")}) > 1


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_draw_keeps_the_records_and_writes_both_tables_with_and_without_runs(plot, tmp_path):
    files = plot.draw([{"label": "x", "setting": {"search.seed": 0, "variant": {"name": "fair"}},
                       "status": "failed"}], str(tmp_path), None,
                      scale=SMALL, seeds=(0,))
    assert sorted(os.path.basename(f) for f in files) == ["figure.png", "simulator.csv", "table.csv"]
    assert (tmp_path / "figure.png").stat().st_size > 10_000
    assert [(r["policy"], r["runs"], r["failed"]) for r in read(tmp_path / "table.csv")] == [("fair", "0", "1")]
    assert len(read(tmp_path / "simulator.csv")) == 2 * len(plot.POLICIES)
    assert json.loads((tmp_path / "runs" / "failed.json").read_text())[0]["label"] == "x"
