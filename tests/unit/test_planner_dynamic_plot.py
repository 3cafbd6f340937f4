"""The planner-dynamic recipe's table from hand-made records: per draw each
system's median over its steady iterations of sync over t_lb; per system
the median and range over the draws, the speedup taken per draw against
NetStorm on the same draw, and every iteration pooled."""

import json

import pytest

from tests.recipe_plot import load_plot
from tests.unit.test_overlay_compare_plot import record


@pytest.fixture(scope="module")
def plot():
    return load_plot("planner-dynamic")


def setting(draw, system):
    return {"dynamics_seed": draw, "variant": {"name": system}}


def steps(*ratios):
    """Iteration 0 (left out) then one iteration per ratio, t_lb 2 s."""
    return [(0, 50, 50, 2.0)] + [(i + 1, 2 * r, 2 * r, 2.0) for i, r in enumerate(ratios)]


def test_the_speedup_is_taken_per_draw_and_every_iteration_is_pooled(plot, tmp_path):
    # Per draw, the medians of NetStorm's and the planner's steady iterations.
    record(tmp_path, "3_netstorm", setting(3, "netstorm"), steps(4, 4, 4), [])
    record(tmp_path, "3_steered", setting(3, "steered"), steps(1, 2, 3), [])       # median 2: 2.0x
    record(tmp_path, "4_netstorm", setting(4, "netstorm"), steps(3, 3, 3), [])
    record(tmp_path, "4_steered", setting(4, "steered"), steps(1, 1, 1), [])       # 3.0x
    record(tmp_path, "5_netstorm", setting(5, "netstorm"), steps(5, 6, 7), [])     # median 6
    record(tmp_path, "5_steered", setting(5, "steered"), steps(5, 5, 5), [])       # 1.2x
    (tmp_path / "failed.json").write_text(json.dumps([]))
    got = {(t["draw"], t["system"]): t for t in plot.table(str(tmp_path))}
    assert got[(3, "steered")]["sync_over_t_lb_median"] == 2.0
    assert got[(3, "steered")]["iterations"] == 3 and got[(3, "steered")]["sync_median_s"] == 4.0
    planner = got[("all", "steered")]
    assert (planner["sync_over_t_lb_min"], planner["sync_over_t_lb_median"],
            planner["sync_over_t_lb_max"]) == (1.0, 2.0, 5.0)
    assert (planner["speedup_min"], planner["speedup_median"], planner["speedup_max"]) == \
        (pytest.approx(1.2), pytest.approx(2.0), pytest.approx(3.0))
    # Pooled: NetStorm's nine iterations 3,3,3,4,4,4,5,6,7 give 4; the planner's 1,1,1,1,2,3,5,5,5 give 2.
    assert planner["pooled_sync_over_t_lb"] == 2.0 and planner["pooled_speedup"] == 2.0
    assert got[("all", "netstorm")]["speedup_median"] == 1.0 and planner["iterations"] == 9


def test_a_failed_run_is_counted_and_its_draw_gives_no_speedup(plot, tmp_path):
    record(tmp_path, "3_netstorm", setting(3, "netstorm"), steps(4), [])
    record(tmp_path, "3_steered", setting(3, "steered"), steps(2), [])
    record(tmp_path, "4_steered", setting(4, "steered"), steps(1), [])
    (tmp_path / "failed.json").write_text(json.dumps([{"label": "4_netstorm", "setting": setting(4, "netstorm")}]))
    got = {(t["draw"], t["system"]): t for t in plot.table(str(tmp_path))}
    assert got[(4, "netstorm")]["failed"] == 1 and got[(4, "netstorm")]["runs"] == 0
    assert got[("all", "steered")]["speedup_median"] == 2.0            # draw 3 only
    assert got[("all", "netstorm")]["failed"] == 1
