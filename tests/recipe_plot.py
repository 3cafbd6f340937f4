"""A recipe's plot.py loaded as a module, as `testbed reproduce` runs it."""

import importlib.util
import os

RESULTS = os.path.join(os.path.dirname(__file__), "..", "results")


def load_plot(recipe_id):
    path = os.path.join(RESULTS, recipe_id, "plot.py")
    spec = importlib.util.spec_from_file_location(f"recipe_{recipe_id.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
