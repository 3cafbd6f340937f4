"""Every recipe that keeps its runs' records (results/<ID>/runs/,
testbed/analysis/records.py) has a table.csv that those records alone
give, and at least three runs of every setting it reports."""

import os

import pytest

from testbed.analysis import records
from testbed.analysis.stats import write_table
from tests.recipe_plot import RESULTS, load_plot

SEEDS = ("experiment.seed", "seed", "search.seed", "dynamics_seed")   # the axes that repeat a setting
KEPT = sorted(name for name in os.listdir(RESULTS)
              if os.path.isdir(os.path.join(RESULTS, name, records.RUNS)))


def test_the_recipes_that_must_keep_records_do():
    assert {"ddp-vs-overlays", "overlay-compare", "netstorm-figure", "nbsync-figure",
            "planner-dynamic", "planner-figure", "beamer-figure"} <= set(KEPT)


@pytest.mark.parametrize("recipe", KEPT)
def test_the_committed_table_is_what_the_committed_records_give(recipe, tmp_path):
    plot = load_plot(recipe)
    runs = os.path.join(RESULTS, recipe, records.RUNS)
    write_table(plot.table(runs), str(tmp_path / "table.csv"), plot.COLUMNS)
    assert (tmp_path / "table.csv").read_text() == open(os.path.join(RESULTS, recipe, "table.csv")).read()


@pytest.mark.parametrize("recipe", KEPT)
def test_every_setting_has_three_runs_or_more(recipe):
    kept, failed = records.load(os.path.join(RESULTS, recipe, records.RUNS))
    settings = {}
    for r in kept:
        key = repr(sorted((k, repr(v)) for k, v in r.setting.items() if k not in SEEDS))
        settings.setdefault(key, []).append(r.label)
    assert settings and all(len(labels) >= 3 for labels in settings.values()), settings
