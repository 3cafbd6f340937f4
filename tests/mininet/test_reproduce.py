"""A figure recipe reproduces end to end (its quick version)."""

import csv
import os

import pytest

from testbed.sweep import load_recipe
from tests.mininet.helpers import ROOT

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
