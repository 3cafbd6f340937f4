"""The overlay-compare recipe's table, computed from hand-made records:
per run the median over iterations after the first, per setting the
median, min and max over runs, time to accuracy by the shared rule."""

import csv
import json

import pytest

from tests.recipe_plot import load_plot


@pytest.fixture(scope="module")
def plot():
    return load_plot("overlay-compare")


STATIC = {"dynamics": [], "variant": {"name": "ps"}}


def record(where, label, setting, steps, evals, t_opt=0.5):
    folder = where / label
    folder.mkdir(parents=True)
    (folder / "setting.json").write_text(json.dumps(setting))
    (folder / "summary.json").write_text(json.dumps({"sync_t_opt": t_opt, "iterations": len(steps)}))
    with open(folder / "iterations.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("it", "sync_s", "from_last_start_s", "t_lb_s"))
        w.writerows(steps)
    with open(folder / "evals.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("t_s", "accuracy"))
        w.writerows(evals)


def test_a_setting_is_the_median_min_and_max_of_its_runs_medians(plot, tmp_path):
    # Iteration 0 (9 s) is left out; counted from the last start the runs'
    # medians are 2.0, 3.0 and 4.0 s, over t_lb 0.5, 1.0 and 1.0: 4, 3 and 4.
    record(tmp_path, "a", {**STATIC, "experiment.seed": 0}, [(0, 9, 9, 0.5), (1, 2, 2, 0.5), (2, 3, 2, 0.5)],
           [(1, 0.80), (2, 0.92), (3, 0.96), (4, 0.96)])
    record(tmp_path, "b", {**STATIC, "experiment.seed": 1}, [(0, 9, 9, 1.0), (1, 3, 3, 1.0)],
           [(1, 0.80), (3, 0.80), (4, 0.99)])
    record(tmp_path, "c", {**STATIC, "experiment.seed": 2}, [(0, 9, 9, 1.0), (1, 4, 4, 1.0)],
           [(1, 0.5), (2, 0.6)])
    (tmp_path / "failed.json").write_text(json.dumps(
        [{"label": "d", "setting": {"dynamics": [{"generator": "square"}], "variant": {"name": "ps"}}}]))
    static, fluctuating = plot.table(str(tmp_path))
    assert (static["runs"], static["failed"]) == (3, 0)
    assert (static["sync_min_s"], static["sync_median_s"], static["sync_max_s"]) == (2.0, 3.0, 4.0)
    assert (static["sync_over_t_lb_min"], static["sync_over_t_lb_median"]) == (3.0, 4.0)
    # Running medians of three: a: 0.80, 0.86, 0.92, 0.96 -> 90% between t=2 (0.86) and t=3 (0.92),
    # two thirds of the way; b: 0.80, 0.80, 0.80 -> never 90% (nor 95%); c never.
    assert static["tta_90_median_s"] == pytest.approx(2 + 0.04 / 0.06)
    assert static["tta_90_reached"] == "1/3"
    assert (fluctuating["network"], fluctuating["runs"], fluctuating["failed"]) == ("fluctuating", 0, 1)
