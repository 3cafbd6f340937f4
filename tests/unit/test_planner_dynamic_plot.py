"""The planner-dynamic recipe's plot: names read back into settings, every
iteration of a system pooled over its draws and runs, and the speed-up
taken against each setting's own baseline, on hand-made numbers."""

import pytest

from testbed.sweeps.sweep import RecipeError
from tests.recipe_plot import load_plot


@pytest.fixture(scope="module")
def plot():
    return load_plot("planner-dynamic")


def test_a_variant_name_gives_its_setting_draw_run_and_system(plot):
    assert plot.parse("dynamic-draw2-run1-steered") == ("dynamic", 2, 1, "steered")
    assert plot.parse("static-10mb-quarter-fixed") == ("static-10mb-quarter", None, None, "fixed")
    with pytest.raises(RecipeError, match="SETTING"):
        plot.parse("Steered")


def test_pooling_takes_the_median_over_every_iteration_of_every_draw_and_run(plot):
    series = {("dynamic", 0, 1, "netstorm"): [(1, 3.0, 1.0), (2, 8.0, 2.0)],      # 3, 4
              ("dynamic", 1, 2, "netstorm"): [(1, 10.0, 2.0)],                     # 5
              ("dynamic", 0, 1, "steered"): [(1, 2.0, 1.0), (2, 6.0, 2.0)],       # 2, 3
              ("dynamic", 1, 2, "steered"): [(1, 2.5, 1.0), (2, 1.0, 1.0)],       # 2.5, 1
              ("static-10mb-quarter", None, None, "fixed"): [(1, 1.5, 1.0)],
              ("static-10mb-quarter", None, None, "steered"): [(1, 1.2, 1.0)]}
    pools = plot.pooled(series)
    assert pools == {("dynamic", "netstorm"): (4.0, 3), ("dynamic", "steered"): (2.25, 4),
                     ("static-10mb-quarter", "fixed"): (1.5, 1),
                     ("static-10mb-quarter", "steered"): (1.2, 1)}
    # 4 / 2.25 against NetStorm; 1.5 / 1.2 against the fixed plan where the WAN holds still.
    assert plot.speedups(pools) == {("dynamic", "steered"): pytest.approx(16 / 9),
                                    ("static-10mb-quarter", "steered"): pytest.approx(1.25)}
    rows = {(r["setting"], r["system"]): r for r in plot.pooled_rows(series)}
    assert rows[("dynamic", "steered")]["speedup"] == pytest.approx(16 / 9)
    assert rows[("dynamic", "netstorm")]["speedup"] is None
    assert rows[("dynamic", "netstorm")]["iterations"] == 3


def test_a_setting_without_its_baseline_has_no_speedup(plot):
    assert plot.speedups({("dynamic", "steered"): (2.0, 9)}) == {}
