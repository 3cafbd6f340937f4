"""`testbed reproduce ID` runs the recipe's plot.py: only recipes kept in
results/ may run, whatever the ID says."""

import os

import pytest

from testbed.sweeps import reproduce as R
from testbed.sweeps.sweep import RecipeError, load_recipe

BASE = """
datacenters: [{name: a, workers: 1, servers: 1}, {name: b, workers: 1}]
wan: [{between: [a, b], bw: 10mbit}]
experiment: {workload: synthetic, model: flat-1000, stop: {iterations: 2}}
"""


def a_recipe(folder, rid, plot="def draw(rows, out_dir, recipe):\n    return []\n"):
    folder.mkdir(parents=True)
    (folder / "base.yaml").write_text(BASE)
    (folder / "recipe.yaml").write_text(f"id: {rid}\ntitle: t\nbase: base.yaml\n"
                                        "axes: {experiment.seed: [0]}\n")
    (folder / "plot.py").write_text(plot)
    return folder


@pytest.fixture
def tree(tmp_path):
    """results/good, a recipe outside results/, and results/evil linking to it."""
    results = tmp_path / "results"
    a_recipe(results / "good", "good")
    marker = tmp_path / "ran"
    outside = a_recipe(tmp_path / "outside", "outside",
                       f"open({str(marker)!r}, 'w').close()\ndef draw(rows, out_dir, recipe):\n"
                       "    return []\n")
    os.symlink(outside, results / "evil")
    return results, outside, marker


def test_a_recipe_in_results_is_found(tree):
    results, _, _ = tree
    assert R.recipe_path("good", str(results)) == os.path.join(os.path.realpath(results), "good",
                                                               "recipe.yaml")


@pytest.mark.parametrize("rid,words", [("../outside", "is not a recipe ID"),
                                       ("good/../../outside", "is not a recipe ID"),
                                       ("..", "is not a recipe ID"), (".", "is not a recipe ID"),
                                       ("evil", "leads outside results/")])
def test_ids_that_lead_out_of_results_are_refused(tree, rid, words):
    results, _, _ = tree
    with pytest.raises(RecipeError, match=words):
        R.recipe_path(rid, str(results))


def test_an_absolute_path_is_refused(tree):
    results, outside, _ = tree
    with pytest.raises(RecipeError, match="is not a recipe ID"):
        R.recipe_path(str(outside), str(results))


def test_a_plot_linked_from_outside_is_not_run(tree, tmp_path):
    results, outside, marker = tree
    good = results / "good"
    os.unlink(good / "plot.py")
    os.symlink(outside / "plot.py", good / "plot.py")
    recipe = load_recipe(R.recipe_path("good", str(results)))
    with pytest.raises(RecipeError, match="leads outside its recipe's folder"):
        R.draw(recipe, [], str(tmp_path / "out"))
    assert not marker.exists()
