"""The ddp-vs-overlays recipe's plot: a DDP step timed from its ranks'
lines as an iteration of the testbed's is, the table computed from the
kept records alone (tests/unit/test_recipe_records.py recomputes the
committed table.csv from the committed records)."""

import csv
import json
import os

import pytest

from agents.planning.wan import GOODPUT_SHARE
from tests.recipe_plot import RESULTS, load_plot

RECIPE = os.path.join(RESULTS, "ddp-vs-overlays")


@pytest.fixture(scope="module")
def plot():
    return load_plot("ddp-vs-overlays")


def test_a_ddp_step_counts_the_slowest_rank_and_from_the_last_start(plot, tmp_path):
    (tmp_path / "programs").mkdir()
    lines = [{"model_bytes": 100, "host": "a"},
             {"step": 0, "start": 10.0, "end": 13.0, "host": "a"},
             {"step": 0, "start": 11.0, "end": 13.5, "host": "b"},
             {"step": 1, "start": 20.0, "end": 22.0, "host": "a"},
             {"step": 1, "start": 20.5, "end": 22.1, "host": "b"}]
    (tmp_path / "programs" / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    # Step 0: a took 3.0, b 2.5; the last start 11.0, the last end 13.5.
    assert plot.ddp_steps(str(tmp_path)) == [(0, 3.0, 2.5), (1, 2.0, pytest.approx(1.6))]


def plot_system(label):
    return label.split("_seed-")[0]


def record(where, label, wan_bytes, model, rows):
    folder = where / label
    folder.mkdir(parents=True)
    summary = {"model_bytes": model, "wan": {d: {"bytes": b} for d, b in wan_bytes.items()}}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "setting.json").write_text(json.dumps({"variant": {"name": plot_system(label)}}))
    with open(folder / "iterations.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("it", "sync_s", "from_last_start_s", "t_lb_s"))
        w.writerows(rows)


def test_the_table_takes_each_run_s_median_after_the_first_iteration_then_the_runs_median(plot, tmp_path):
    model = 1448 * 1000
    wan = {d: 0 for d in plot.DIRECTIONS}
    # Four iterations in all: 4 models of payload over a direction is one model a sync.
    wan["tokyo->frankfurt"] = 4 * model / GOODPUT_SHARE
    rows = [(0, 9.0, 9.0, 1.0), (1, 4.0, 3.0, 1.0), (2, 5.0, 4.0, 1.0), (3, 6.0, 8.0, 1.0)]  # 4.0, 5.0
    record(tmp_path, "ddp-ring_seed-0", wan, model, rows)
    # Two iterations: two models over a direction are one a sync.
    short = {**wan, "tokyo->frankfurt": 2 * model / GOODPUT_SHARE}
    record(tmp_path, "ddp-ring_seed-1", short, model, [(0, 1, 1, 1.0), (1, 2.0, 2.0, 1.0)])    # 2.0
    record(tmp_path, "ddp-ring_seed-2", short, model, [(0, 1, 1, 1.0), (1, 7.0, 6.0, 1.0)])    # 6.0
    (tmp_path / "failed.json").write_text(json.dumps([{"label": "ps-star_seed-0", "setting": {}}]))
    ring, star = plot.table(str(tmp_path))
    assert ring["runs"] == 3 and ring["failed"] == 0
    assert (ring["sync_median_s"], ring["sync_min_s"], ring["sync_max_s"]) == (4.0, 2.0, 6.0)
    assert ring["push_to_pull_median_s"] == 5.0 and ring["median_over_t_lb"] == 4.0
    assert ring["models_per_sync tokyo->frankfurt"] == pytest.approx(1.0)
    assert ring["models_per_sync frankfurt->tokyo"] == 0.0
    assert star == {"system": "ps-star", "runs": 0, "failed": 1}
