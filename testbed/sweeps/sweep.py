"""Sweeps: a base topo.yaml and axes to vary, run one Mininet experiment at
a time, resumable.

    id: ps-scaling
    title: one line saying what the figure shows
    base: base.yaml                 # relative to the recipe
    axes:                           # the cross product is run, in this order
      worker_dcs: [2, 3, 4]         # keep the first N DCs that have workers
      experiment.seed: [0, 1, 2]    # any dotted path into topo.yaml
    set: {experiment.stop.iterations: 5}     # applied to every run
    quick:                          # `--quick`: a scaled-down version
      axes: {worker_dcs: [2, 3], experiment.seed: [0]}
      set: {experiment.model: flat-250000}

Besides dotted paths, seven axes transform the topology: `worker_dcs`,
`workers` (per DC that has workers), `bw_scale` (every WAN rate),
`dynamics_every` (the period of every generated rate change, `every` of
each dynamics entry that has one), `dynamics_seed` (another draw of every
seeded generator: 0 is the base's own), `seed` (`experiment.seed` and,
where the setting has seeded generators, their draw of the same number,
so one seed repeats a run's shards, weights and link rates for every
system of a comparison) and `variant`, whose values are named
bundles of dotted paths, for settings that are not a cross product (a
system and its ablations, say):

      variant:
        - {name: star, experiment.overlay: ps}
        - {name: netstorm-R1, experiment.overlay: netstorm,
           experiment.overlay_options: {roots: 1}}

A run is keyed by the hash of its resolved spec: re-running a sweep skips
every setting whose key already has a completed run, so a sweep resumes
where it stopped and re-runs what changed.  A failed run is recorded and
the sweep goes on.
"""

import contextlib
import copy
import dataclasses
import hashlib
import itertools
import json
import logging
import os
import platform
from dataclasses import dataclass

import yaml

from testbed import spec as specmod
from testbed.records.runfolder import RunFolder, is_run_folder
from testbed.spec import validate as check
from testbed.spec.dynamics import SEEDED_GENERATORS
from testbed.spec.experiment import UNKEYED_AT_DEFAULT
from testbed.spec.overrides import set_path
from testbed.spec.units import format_rate, parse_rate
from testbed.spec.validate import SpecError

log = logging.getLogger(__name__)
RECIPE_KEYS = {"id", "title", "base", "axes", "set", "quick", "description"}
TRANSFORMS = ("worker_dcs", "workers", "bw_scale", "dynamics_every", "dynamics_seed", "seed",
              "variant")
TOP_KEYS = specmod.TOP_KEYS


class RecipeError(ValueError):
    """A recipe that cannot be expanded; the text says where and why."""


MAX_LABEL = 120          # characters of a setting's folder name, before its run key


def _digest(value):
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class Setting:
    values: tuple            # ((axis, value), ...) in axis order

    @property
    def label(self):
        """A folder name for the setting: axis-value pairs; a list or a
        mapping (a dynamics section, say) stands as a short hash of itself,
        and a label too long for a file name keeps a hash of its tail."""
        parts = []
        for axis, value in self.values:
            short = axis.rsplit(".", 1)[-1]
            if axis == "variant":
                parts.append(str(value["name"]))
                continue
            parts.append(f"{short}-{_digest(value) if isinstance(value, (list, dict)) else value}")
        label = "_".join(parts).replace("/", "-").replace(" ", "") or "base"
        if len(label) > MAX_LABEL:
            label = f"{label[:MAX_LABEL - 9]}-{_digest(label)}"
        return label

    def as_dict(self):
        return dict(self.values)


@dataclass(frozen=True)
class Recipe:
    id: str
    title: str
    folder: str
    base: str                # path of the base topo.yaml
    axes: tuple              # ((axis, [values]), ...)
    set: dict

    def settings(self):
        names = [a for a, _ in self.axes]
        return [Setting(tuple(zip(names, combo)))
                for combo in itertools.product(*[v for _, v in self.axes])]


def load_recipe(path, quick=False):
    try:
        with open(path) as f:
            raw = yaml.safe_load(f)
    except OSError as e:
        raise RecipeError(f"{path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: not valid YAML: {str(e).splitlines()[0]}") from None
    try:
        with SpecError.at("", "the layout of a recipe in results/"):
            return _recipe(raw, path, quick)
    except SpecError as e:
        raise RecipeError(f"{path}: {e}") from None


def _recipe(raw, path, quick):
    """The Recipe of a recipe file's document; raises SpecError."""
    if not isinstance(raw, dict):
        raise SpecError("", "a recipe is a mapping with id, base and axes")
    check.keys(raw, RECIPE_KEYS, "")
    for key in ("id", "base", "axes"):
        if key not in raw:
            raise SpecError(key, "missing")
    folder = os.path.dirname(os.path.abspath(path))
    axes = dict(check.mapping(raw["axes"] or {}, "axes", "each axis with its values"))
    fixed = dict(check.mapping(raw.get("set") or {}, "set", "dotted paths with their values"))
    if quick:
        q = check.mapping(raw.get("quick") or {}, "quick", "axes, set")
        if not q:
            raise SpecError("", "has no quick: section")
        check.keys(q, {"axes", "set"}, "quick")
        axes.update(check.mapping(q.get("axes") or {}, "quick.axes", "each axis with its values"))
        fixed.update(check.mapping(q.get("set") or {}, "quick.set", "dotted paths with their values"))
    for axis, values in axes.items():
        if not isinstance(values, list) or not values:
            raise SpecError(f"axes.{axis}", "give a non-empty list of values")
        _check_axis(axis)
        if axis == "variant":
            _check_variants(values)
    for key in fixed:
        _check_axis(key)
    base = os.path.join(folder, raw["base"])
    if not os.path.isfile(base):
        raise SpecError("base", f"{raw['base']} not found next to the recipe")
    return Recipe(id=str(raw["id"]), title=str(raw.get("title", "")), folder=folder, base=base,
                  axes=tuple(axes.items()), set=fixed)


def _check_variants(values):
    names = set()
    for i, v in enumerate(values):
        if not isinstance(v, dict) or not isinstance(v.get("name"), str) or not v["name"]:
            raise SpecError(f"axes.variant[{i}]", "give a mapping with a name and dotted paths, "
                                                  "like {name: star, experiment.overlay: ps}")
        if v["name"] in names:
            raise SpecError(f"axes.variant[{i}]", f"the name {v['name']!r} is taken")
        names.add(v["name"])
        for key in v:
            if key != "name":
                _check_axis(key)


def _check_axis(axis):
    if axis in TRANSFORMS:
        return
    if not isinstance(axis, str) or axis.split(".", 1)[0] not in TOP_KEYS:
        raise SpecError("", f"{axis!r} is neither a dotted path into topo.yaml "
                            f"({', '.join(sorted(TOP_KEYS))}) nor one of {', '.join(TRANSFORMS)}")


# ------------------------------------------------------------ applying


def keep_worker_dcs(doc, n):
    """Keep the first n DCs that have workers (and every DC without), and
    the links among the DCs kept."""
    kept, with_workers = [], 0
    for dc in doc["datacenters"]:
        if dc.get("workers", 0) > 0:
            with_workers += 1
            if with_workers > n:
                continue
        kept.append(dc)
    if with_workers < n:
        raise RecipeError(f"worker_dcs={n}: the base has only {with_workers} DCs with workers")
    names = {dc["name"] for dc in kept}
    doc["datacenters"] = kept
    doc["wan"] = [w for w in doc["wan"] if set(w.get("between", [])) <= names]


def scale_bandwidth(doc, factor):
    def scale(entry):
        if "bw" in entry:
            entry["bw"] = format_rate(parse_rate(entry["bw"]) * factor)
    for w in doc["wan"]:
        scale(w)
        for d in ("forward", "reverse"):
            if isinstance(w.get(d), dict):
                scale(w[d])


def retime_dynamics(doc, every):
    """Every generated rate change (a dynamics entry with an `every`) at
    period `every`; the spec checks the value like any other."""
    timed = [d for d in doc.get("dynamics") or [] if isinstance(d, dict) and "every" in d]
    if not timed:
        raise RecipeError(f"dynamics_every={every}: the base has no generated rate changes to re-time")
    for entry in timed:
        entry["every"] = every


def redraw_dynamics(doc, draw):
    """Draw `draw` of every seeded generator: each seed (0 where the entry
    names none, as the generator does) moves up by `draw` times the span of
    the base's seeds plus one, so no two entries of one draw, and no entries
    of two draws, share a seed; draw 0 leaves the base as it is."""
    if isinstance(draw, bool) or not isinstance(draw, int) or draw < 0:
        raise RecipeError(f"dynamics_seed={draw!r}: give a whole number, 0 for the base's own draws")
    seeded = [d for d in doc.get("dynamics") or []
              if isinstance(d, dict) and d.get("generator") in SEEDED_GENERATORS]
    if not seeded:
        raise RecipeError(f"dynamics_seed={draw}: the base has no seeded generators to draw again")
    seeds = [d.get("seed", 0) for d in seeded]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in seeds):
        return      # the spec refuses the seed itself, in its own words
    span = max(seeds) - min(seeds) + 1
    for entry, seed in zip(seeded, seeds):
        entry["seed"] = seed + draw * span


def apply(doc, axis, value):
    if axis == "worker_dcs":
        keep_worker_dcs(doc, value)
    elif axis == "workers":
        for dc in doc["datacenters"]:
            if dc.get("workers", 0) > 0:
                dc["workers"] = value
    elif axis == "bw_scale":
        scale_bandwidth(doc, value)
    elif axis == "dynamics_every":
        retime_dynamics(doc, value)
    elif axis == "dynamics_seed":
        redraw_dynamics(doc, value)
    elif axis == "seed":
        set_path(doc, "experiment.seed", value)
        if any(isinstance(d, dict) and d.get("generator") in SEEDED_GENERATORS
               for d in doc.get("dynamics") or []):
            redraw_dynamics(doc, value)
    elif axis == "variant":
        for key, v in value.items():
            if key != "name":
                apply(doc, key, v)
    else:
        set_path(doc, axis, value)


def setting_document(recipe, setting):
    """The topo.yaml document of one setting (a plain dict)."""
    with open(recipe.base) as f:
        doc = yaml.safe_load(f)
    doc = copy.deepcopy(doc)
    for key, value in recipe.set.items():
        apply(doc, key, value)
    for axis, value in setting.values:
        apply(doc, axis, value)
    doc["name"] = recipe.id[:15].rstrip("-")
    # Traces and the programs' folder are named relative to the base; the
    # setting's file lives elsewhere.
    base_dir = os.path.dirname(recipe.base)
    for entry in doc.get("dynamics") or []:
        if isinstance(entry, dict) and "trace" in entry and not os.path.isabs(str(entry["trace"])):
            entry["trace"] = os.path.join(base_dir, str(entry["trace"]))
    exp = doc.get("experiment")
    if isinstance(exp, dict) and "programs" in exp and isinstance(exp.get("workdir", ""), str):
        exp["workdir"] = os.path.normpath(os.path.join(base_dir, exp.get("workdir", "")))
    return doc


def spec_key(spec):
    """A short hash of everything that defines the run (not where it came from)."""
    data = keyed(spec)
    data.pop("source", None)
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def keyed(value):
    """`value` as plain data, as dataclasses.asdict gives it, less the
    fields marked UNKEYED_AT_DEFAULT that are at their default."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: keyed(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not (f.metadata.get(UNKEYED_AT_DEFAULT) and getattr(value, f.name) == f.default)}
    if isinstance(value, (list, tuple)):
        return type(value)(keyed(v) for v in value)
    if isinstance(value, dict):
        return {k: keyed(v) for k, v in value.items()}
    return copy.deepcopy(value)


@dataclass
class Planned:
    setting: Setting
    spec: object
    key: str
    folder: str              # where this setting's runs go


def plan(recipe, sweep_dir):
    """Validate and key every setting, then write each one's topo.yaml: a
    recipe refused at any setting leaves no trace."""
    specs = os.path.join(sweep_dir, "specs")
    made = []
    for setting in recipe.settings():
        text = yaml.safe_dump(setting_document(recipe, setting), sort_keys=False)
        path = os.path.abspath(os.path.join(specs, f"{setting.label}.yaml"))
        try:
            made.append((setting, path, text, specmod.loads(text, source=path, default_name=setting.label)))
        except specmod.SpecError as e:
            raise RecipeError(f"setting {setting.label}: {e}") from None
    os.makedirs(specs, exist_ok=True)
    out = []
    for setting, path, text, spec in made:
        with open(path, "w") as f:
            f.write(text)
        key = spec_key(spec)
        out.append(Planned(setting, spec, key, os.path.join(sweep_dir, f"{setting.label}-{key}")))
    return out


def completed_run(folder):
    """The newest completed run folder of a setting, or None."""
    if not os.path.isdir(folder):
        return None
    for name in sorted(os.listdir(folder), reverse=True):
        path = os.path.join(folder, name)
        if is_run_folder(path) and RunFolder(path).read_json("status.json", {}).get("status") == "completed":
            return path
    return None


def run_folders(folder):
    if not os.path.isdir(folder):
        return set()
    return {os.path.join(folder, n) for n in os.listdir(folder)
            if is_run_folder(os.path.join(folder, n))}


def attempt(p, run_one):
    """(run folder or None, status, reason) of one run of a setting.  A run
    that raises after its folder exists (its network failed to build, say)
    is recorded as failed; an error before any folder (not root, a tool
    missing) would fail every setting alike, so it ends the sweep."""
    before = run_folders(p.folder)
    try:
        done = run_one(p)
    except Exception as e:  # noqa: BLE001 - one setting's failure must not end the sweep
        made = sorted(run_folders(p.folder) - before)
        if not made:
            raise
        # The reason goes into the record; the traceback only into a debug log.
        log.debug("setting %s failed", p.setting.label, exc_info=True)
        return made[-1], "failed", f"{type(e).__name__}: {e}"
    if not done:
        return None, "failed", "the run left no folder"
    status = RunFolder(done).read_json("status.json", {})
    return done, status.get("status", "failed"), status.get("reason", "")


SKIPPED = "skipped (already completed)"


def run_locally(planned, delay_backend, say=lambda line: None):
    """One setting's run on this machine: what a sweep does for each setting,
    here or as a task on a machine of a cluster.  Returns the run folder;
    say() hears why a setting failed."""
    from testbed.run import runend, runner
    outcome = runner.run(planned.spec, planned.folder, delay_backend, show=lambda line: None,
                         say=lambda line: None)
    if outcome.stopped_by == runend.INTERRUPTED:
        # Ctrl-C ends the sweep, not only this setting; running it again resumes.
        raise KeyboardInterrupt
    if outcome.status != "completed":
        say(f"{planned.setting.label}: failed: {outcome.reason.splitlines()[0]}")
    return outcome.folder.path


def one_by_one(todo, run_one, tell):
    """The local way to run a sweep's settings: in order, on this machine.
    Yields (planned, (run folder or None, status, reason, machine))."""
    machine = platform.node()
    for p in todo:
        tell(p.setting.label)
        yield p, (*attempt(p, run_one), machine)


def run_sweep(recipe, sweep_dir, run_one, progress=lambda done, total, text: None, execute=None):
    """Run every setting not yet completed.  run_one(planned) -> run folder
    path.  execute(todo, tell), if given, runs the settings instead (on a
    cluster, say): it yields each as it ends, like one_by_one, and calls
    tell(text) with what runs where.  Returns the sweep record."""
    planned = plan(recipe, sweep_dir)
    outcomes, todo = {}, []
    for p in planned:
        done = completed_run(p.folder)
        if done:
            outcomes[p.folder] = (done, SKIPPED, "", None)
        else:
            todo.append(p)
    total = len(planned)
    progress(len(outcomes), total, f"{len(outcomes)} already completed" if outcomes else "")
    execute = execute or (lambda todo, tell: one_by_one(todo, run_one, tell))
    # closing(): an interrupted sweep stops its runs now, not when the generator is collected.
    with contextlib.closing(execute(todo, lambda text: progress(len(outcomes), total, text))) as runs:
        for p, outcome in runs:
            outcomes[p.folder] = outcome
            progress(len(outcomes), total, p.setting.label)
    record = []
    for p in planned:
        done, status, reason, machine = outcomes[p.folder]
        entry = {"label": p.setting.label, "values": p.setting.as_dict(), "key": p.key,
                 "run": done, "status": status}
        if machine:
            entry["machine"] = machine
        if status == "failed":
            entry["reason"] = reason
        record.append(entry)
    with open(os.path.join(sweep_dir, "sweep.json"), "w") as f:
        json.dump({"recipe": recipe.id, "settings": record}, f, indent=1)
    return record
