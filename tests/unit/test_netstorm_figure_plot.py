"""The netstorm-figure recipe's table from hand-made records: the speedup
over the star is taken per seed, the star's time over the system's in
runs with the same seed, then its median, min and max."""

import json

import pytest

from tests.recipe_plot import load_plot
from tests.unit.test_overlay_compare_plot import record


@pytest.fixture(scope="module")
def plot():
    return load_plot("netstorm-figure")


def setting(variant, seed):
    return {"variant": {"name": variant}, "experiment.seed": seed}


def rising(at):
    """Evaluations whose running median of three crosses 85% at `at` + 1 s."""
    return [(at - 2, 0.5), (at - 1, 0.75), (at, 0.85), (at + 1, 0.9), (at + 2, 0.9)]


def test_the_speedup_is_the_median_and_range_of_the_per_seed_ratios(plot, tmp_path):
    steps = [(0, 9, 9, 1.0), (1, 4, 4, 1.0)]
    # The smoothed curve: the median of (0.5, 0.75, 0.85) is 0.75 at `at`, of (0.75, 0.85, 0.9)
    # 0.85 at `at` + 1.
    for seed, star, storm in ((0, 30, 10), (1, 40, 8), (2, 60, 30)):
        record(tmp_path, f"static-mxnet_{seed}", setting("static-mxnet", seed), steps, rising(star - 1))
        record(tmp_path, f"static-netstorm_{seed}", setting("static-netstorm", seed), steps, rising(storm - 1))
    (tmp_path / "failed.json").write_text(json.dumps([]))
    star, storm = plot.table(str(tmp_path))
    assert (star["system"], storm["system"]) == ("mxnet", "netstorm")
    assert (storm["tta_85_min_s"], storm["tta_85_median_s"], storm["tta_85_max_s"]) == (8, 10, 30)
    # Per seed: 30/10, 40/8, 60/30 (the ratio of the medians, 40/10, is not one of them).
    assert (storm["speedup_85_min"], storm["speedup_85_median"], storm["speedup_85_max"]) == \
        (pytest.approx(2.0), pytest.approx(3.0), pytest.approx(5.0))
    assert star["speedup_85_median"] == 1 and storm["tta_85_reached"] == "3/3"
    assert storm["sync_over_t_lb_median"] == 4.0
