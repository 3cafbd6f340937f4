"""`testbed reproduce ID`: run a figure recipe's sweep and redraw its figure.

A recipe lives in results/<ID>/: recipe.yaml (the sweep), base.yaml (the
topology it varies), plot.py (draw(rows, out_dir, recipe) writes figure.png
and table.csv) and README.md (what the figure shows, the setting, how it
differs from the paper's, the measured numbers).  A full reproduction
redraws results/<ID>/; `--quick` runs the scaled-down sweep and draws into
its own folder, so the checked-in figure stays the full one.
"""

import importlib.util
import os

from testbed.analysis import report
from testbed.records.runfolder import RunFolder
from testbed.sweeps.sweep import RecipeError, load_recipe, run_locally, run_sweep

# The repository: this file is testbed/sweeps/reproduce.py.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "results")
ROW_METRICS = ("status", "iterations", "wall_time", "iteration_time", "sync_time", "sync_bound",
               "sync_over_bound", "sync_t_lb", "sync_t_opt", "sync_over_t_lb", "sync_from_last_start",
               "sync_from_last_start_over_t_lb", "sync_t_lb_as_run", "sync_over_t_lb_as_run",
               "sync_from_last_start_over_t_lb_as_run", "final_accuracy",
               "time_to_target", "target_accuracy", "model_bytes")


def recipes(root=RESULTS):
    """[(id, title)] of every folder in results/ with a recipe.yaml."""
    out = []
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, name, "recipe.yaml")
        if os.path.isfile(path):
            out.append((name, load_recipe(path).title))
    return out


def recipe_path(recipe_id, root=RESULTS):
    """results/<ID>/recipe.yaml.  Reproducing runs the recipe's plot.py, so
    the ID must name a folder directly inside results/: a path, `..` or a
    symbolic link that leads elsewhere is refused."""
    def known():
        return ", ".join(i for i, _ in recipes(root)) or "none"
    if recipe_id in ("", ".", "..") or "/" in recipe_id or "\0" in recipe_id:
        raise RecipeError(f"{recipe_id!r} is not a recipe ID: name a folder of results/ "
                          f"(recipes: {known()})")
    folder = os.path.realpath(os.path.join(root, recipe_id))
    if os.path.dirname(folder) != os.path.realpath(root):
        raise RecipeError(f"results/{recipe_id} leads outside results/; only recipes kept "
                          "there are run")
    path = os.path.join(folder, "recipe.yaml")
    if not os.path.isfile(path):
        raise RecipeError(f"no recipe {recipe_id!r} (recipes: {known()})")
    return path


def rows_of(record):
    """One row per setting: its axis values (also together, as `setting`),
    its run and the summary metrics."""
    rows = []
    for entry in record:
        row = {**entry["values"], "label": entry["label"], "run": entry["run"],
               "setting": entry["values"]}
        if entry["run"]:
            summary = report.summarize(RunFolder(entry["run"]))
            row.update({k: summary.get(k) for k in ROW_METRICS})
            cpu = summary.get("cpu") or {}
            row.update({"cpu_busy": cpu.get("busy"), "cpu_saturated": cpu.get("saturated"),
                        "cpu_stolen": cpu.get("stolen")})
        else:
            row["status"] = "failed"
        rows.append(row)
    return rows


def draw(recipe, rows, out_dir):
    plot = os.path.join(recipe.folder, "plot.py")
    if os.path.dirname(os.path.realpath(plot)) != os.path.realpath(recipe.folder):
        raise RecipeError(f"{plot} leads outside its recipe's folder; it is not run")
    spec = importlib.util.spec_from_file_location(f"recipe_{recipe.id.replace('-', '_')}", plot)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.makedirs(out_dir, exist_ok=True)
    return module.draw(rows, out_dir, recipe)


def reproduce(recipe_id, quick, runs_root, out_dir=None, delay_backend="auto", say=print,
              progress=lambda done, total, text: None, execute=None):
    """Run (or resume) the recipe's sweep, then draw.  Returns (rows, files).
    execute: how the settings run (see sweep.run_sweep); here by default."""
    recipe = load_recipe(recipe_path(recipe_id), quick=quick)
    sweep_dir = os.path.join(runs_root, "sweeps", recipe.id + ("-quick" if quick else ""))

    record = run_sweep(recipe, sweep_dir, lambda planned: run_locally(planned, delay_backend, say),
                       progress, execute)
    rows = rows_of(record)
    out_dir = out_dir or (sweep_dir if quick else recipe.folder)
    return rows, draw(recipe, rows, out_dir)
