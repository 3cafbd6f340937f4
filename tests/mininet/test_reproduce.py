"""A figure recipe reproduces end to end (its quick version)."""

import csv
import os

import pytest

from testbed.analysis import records
from testbed.analysis.stats import write_table
from testbed.sweeps.sweep import load_recipe
from tests.mininet.helpers import ROOT
from tests.recipe_plot import load_plot

pytestmark = pytest.mark.mininet


@pytest.mark.timeout(900)
def test_ps_scaling_quick_draws_its_figure_and_one_table_row_per_setting(ps_scaling_quick):
    out = ps_scaling_quick / "out"
    assert os.path.getsize(out / "figure.png") > 5000
    rows = list(csv.DictReader(open(out / "table.csv")))
    recipe = load_recipe(os.path.join(ROOT, "results", "ps-scaling", "recipe.yaml"), quick=True)
    assert [int(row["dcs"]) for row in rows] == dict(recipe.axes)["worker_dcs"]
    for row in rows:
        assert row["failed"] == "0" and float(row["sync_median_s"]) > float(row["bound_s"]) > 0
    # The in-cast: one more DC, a longer sync over the same bound.
    assert float(rows[-1]["median_over_bound"]) > float(rows[0]["median_over_bound"])
    # t_lb adds the partition constraints to the cut's, and the best tree
    # packing is one schedule t_lb bounds: cut <= t_lb <= t_opt <= the star.
    # Two DCs: one partial sum each way, so t_lb is the cut bound; three:
    # 4/3 of a model over an uplink against one.
    for row in rows:
        cut, t_lb, t_opt = (float(row[k]) for k in ("bound_s", "t_lb_s", "t_opt_s"))
        assert cut <= t_lb * 1.001 and t_lb <= t_opt * 1.001 and t_opt < float(row["sync_median_s"])
        assert float(row["median_over_t_lb"]) == pytest.approx(float(row["sync_median_s"]) / t_lb, rel=2e-3)
    assert float(rows[0]["t_lb_s"]) == pytest.approx(float(rows[0]["bound_s"]), rel=0.01)
    assert float(rows[1]["t_lb_s"]) > 1.1 * float(rows[1]["bound_s"])


@pytest.mark.timeout(900)
def test_the_quick_reproduction_keeps_the_records_its_table_is_computed_from(ps_scaling_quick, tmp_path):
    out = ps_scaling_quick / "out"
    kept, failed = records.load(str(out / records.RUNS))
    assert failed == [] and sorted(r.setting["worker_dcs"] for r in kept) == [2, 3]
    for r in kept:
        assert r.summary["status"] == "completed" and r.setting["experiment.seed"] == 0
        # Every iteration the run made, each with its sync time and the WAN's t_lb.
        assert [s["it"] for s in r.steps] == list(range(r.summary["iterations"]))
        assert all(s["from_last_start_s"] > 0 and s["t_lb_s"] == pytest.approx(r.summary["sync_t_lb"], rel=1e-3)
                   for s in r.steps)
    plot = load_plot("ps-scaling")
    write_table(plot.table(str(out / records.RUNS)), str(tmp_path / "table.csv"), plot.COLUMNS)
    assert (tmp_path / "table.csv").read_text() == (out / "table.csv").read_text()
