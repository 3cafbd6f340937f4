import os
import textwrap

import pytest
import yaml

from testbed.records.runfolder import RunFolder
from testbed.sweeps import sweep as W

BASE = """
name: base
datacenters:
  - {name: ps, servers: 1, workers: 1}
  - {name: core}
  - {name: a, workers: 1}
  - {name: b, workers: 1}
wan:
  - {between: [ps, core], bw: 50mbit, delay: 10ms}
  - {between: [a, core], bw: 20mbit, reverse: {bw: 10mbit}}
  - {between: [b, core], bw: 50mbit}
experiment: {workload: synthetic, model: resnet18, stop: {iterations: 5}}
"""


def recipe_at(tmp_path, body, base=BASE):
    (tmp_path / "base.yaml").write_text(textwrap.dedent(base))
    (tmp_path / "recipe.yaml").write_text(textwrap.dedent(body))
    return str(tmp_path / "recipe.yaml")


RECIPE = """
id: demo
title: a demo
base: base.yaml
axes:
  worker_dcs: [2, 3]
  experiment.seed: [0, 1]
set: {experiment.stop.iterations: 2}
quick:
  axes: {worker_dcs: [2]}
"""


def test_the_cross_product_runs_in_axis_order_with_readable_labels(tmp_path):
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))
    assert [s.label for s in r.settings()] == ["worker_dcs-2_seed-0", "worker_dcs-2_seed-1",
                                               "worker_dcs-3_seed-0", "worker_dcs-3_seed-1"]
    q = W.load_recipe(recipe_at(tmp_path, RECIPE), quick=True)
    assert [s.label for s in q.settings()] == ["worker_dcs-2_seed-0", "worker_dcs-2_seed-1"]


def test_settings_transform_the_base_document(tmp_path):
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))
    doc = W.setting_document(r, r.settings()[1])
    assert [d["name"] for d in doc["datacenters"]] == ["ps", "core", "a"]
    assert [w["between"] for w in doc["wan"]] == [["ps", "core"], ["a", "core"]]
    assert doc["experiment"]["seed"] == 1 and doc["experiment"]["stop"]["iterations"] == 2


def test_a_recipe_can_compare_the_hosts_tcp_settings(tmp_path):
    from testbed import spec as S
    r = W.load_recipe(recipe_at(tmp_path, RECIPE.replace(
        "experiment.seed: [0, 1]", "tcp.slow_start_after_idle: [true, false]")))
    restarts = [S.loads(yaml.safe_dump(W.setting_document(r, s))).tcp.slow_start_after_idle
                for s in r.settings()]
    assert restarts == [True, False, True, False]


def test_a_setting_s_programs_run_where_the_base_says_not_where_its_file_is(tmp_path):
    base = BASE.replace("experiment: {workload: synthetic, model: resnet18, stop: {iterations: 5}}",
                        "experiment: {workload: command, programs: [{command: x}], workdir: code}")
    path = recipe_at(tmp_path, RECIPE, base)
    (tmp_path / "code").mkdir()
    recipe = W.load_recipe(path)
    doc = W.setting_document(recipe, recipe.settings()[0])
    assert doc["experiment"]["workdir"] == str(tmp_path / "code")
    without = base.replace(", workdir: code", "")
    recipe = W.load_recipe(recipe_at(tmp_path, RECIPE, without))
    assert W.setting_document(recipe, recipe.settings()[0])["experiment"]["workdir"] == str(tmp_path)


def test_bandwidth_scale_and_workers_axes():
    doc = yaml.safe_load(BASE)
    W.apply(doc, "bw_scale", 0.5)
    W.apply(doc, "workers", 3)
    assert [w["bw"] for w in doc["wan"]] == ["25mbit", "10mbit", "25mbit"]
    assert doc["wan"][1]["reverse"]["bw"] == "5mbit"
    assert [d.get("workers", 0) for d in doc["datacenters"]] == [3, 0, 3, 3]


def test_the_dynamics_period_axis_retimes_every_generator_and_leaves_traces_alone():
    doc = yaml.safe_load(BASE)
    doc["dynamics"] = [
        {"generator": "uniform", "link": ["a", "core"], "low": "1mbit", "high": "5mbit", "every": "10s"},
        {"generator": "random_walk", "link": ["b", "core"], "low": "1mbit", "high": "5mbit",
         "step": "1mbit", "every": "2s"},
        {"trace": "t.csv", "link": ["ps", "core"]}]
    W.apply(doc, "dynamics_every", "50s")
    assert [d.get("every") for d in doc["dynamics"]] == ["50s", "50s", None]
    with pytest.raises(W.RecipeError, match="no generated rate changes"):
        W.apply(yaml.safe_load(BASE), "dynamics_every", "50s")


def test_the_dynamics_seed_axis_draws_every_seeded_generator_again_without_sharing_a_seed():
    doc = yaml.safe_load(BASE)
    doc["dynamics"] = [
        {"generator": "uniform", "link": ["a", "core"], "low": "1mbit", "high": "5mbit", "every": "10s",
         "seed": 4},
        {"generator": "random_walk", "link": ["b", "core"], "low": "1mbit", "high": "5mbit",
         "step": "1mbit", "every": "2s"},
        {"generator": "square", "link": ["ps", "core"], "low": "1mbit", "high": "5mbit", "period": "4s"}]
    base = yaml.safe_load(yaml.safe_dump(doc))
    W.apply(doc, "dynamics_seed", 0)
    assert [d.get("seed", 0) for d in doc["dynamics"]] == [4, 0, 0]
    draws = []
    for draw in (1, 2):
        again = yaml.safe_load(yaml.safe_dump(base))
        W.apply(again, "dynamics_seed", draw)
        draws.append([d.get("seed") for d in again["dynamics"]])
    # The seeds span 0-4, so draws are 5 apart: 4 -> 9 -> 14, 0 -> 5 -> 10; the square has none.
    assert draws == [[9, 5, None], [14, 10, None]]
    assert len({s for d in [[4, 0]] + draws for s in d if s is not None}) == 6


def test_the_dynamics_seed_axis_changes_the_rates_a_run_meets():
    from testbed import spec as S
    doc = yaml.safe_load(BASE)
    doc["dynamics"] = [{"generator": "uniform", "link": ["a", "core"], "low": "1mbit", "high": "5mbit",
                        "every": "10s", "seed": 1}]
    rates = []
    for draw in (0, 0, 1):
        again = yaml.safe_load(yaml.safe_dump(doc))
        W.apply(again, "dynamics_seed", draw)
        actions = S.loads(yaml.safe_dump(again)).dynamics[0].actions(30)
        rates.append([a.rate for a in actions])
    assert rates[0] == rates[1] and rates[0] != rates[2]


def test_the_dynamics_seed_axis_refuses_what_it_cannot_draw():
    doc = yaml.safe_load(BASE)
    with pytest.raises(W.RecipeError, match="no seeded generators"):
        W.apply(doc, "dynamics_seed", 1)
    doc["dynamics"] = [{"generator": "uniform", "link": ["a", "core"], "low": "1mbit", "high": "5mbit",
                        "every": "10s"}]
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(W.RecipeError, match="give a whole number"):
            W.apply(doc, "dynamics_seed", bad)


def test_the_seed_axis_sets_the_experiment_seed_and_draws_the_links_with_it():
    doc = yaml.safe_load(BASE)
    doc["dynamics"] = [{"generator": "uniform", "link": ["a", "core"], "low": "1mbit", "high": "5mbit",
                        "every": "10s", "seed": 3}]
    static = yaml.safe_load(BASE)
    for draw in (0, 2):
        dynamic, plain = yaml.safe_load(yaml.safe_dump(doc)), yaml.safe_load(yaml.safe_dump(static))
        W.apply(dynamic, "seed", draw)
        W.apply(plain, "seed", draw)
        assert dynamic["experiment"]["seed"] == plain["experiment"]["seed"] == draw
        # One seeded entry spans one seed: draw 2 moves 3 to 5; a setting with none is left so.
        assert dynamic["dynamics"][0]["seed"] == 3 + draw
        assert not plain.get("dynamics")


def test_asking_for_more_dcs_than_the_base_has_is_refused():
    with pytest.raises(W.RecipeError, match="only 3 DCs with workers"):
        W.keep_worker_dcs(yaml.safe_load(BASE), 4)


def test_a_run_key_follows_the_resolved_spec_not_the_file(tmp_path):
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))
    first = W.plan(r, str(tmp_path / "s1"))
    again = W.plan(r, str(tmp_path / "s2"))
    assert [p.key for p in first] == [p.key for p in again]
    assert len({p.key for p in first}) == 4
    changed = W.load_recipe(recipe_at(tmp_path, RECIPE.replace("iterations: 2", "iterations: 3")))
    assert not {p.key for p in W.plan(changed, str(tmp_path / "s3"))} & {p.key for p in first}


def test_probes_on_one_budget_keep_the_key_they_had_before_a_steady_budget_existed():
    import dataclasses
    import hashlib
    import json

    from testbed import spec as S

    def spec(probe):
        return S.loads(textwrap.dedent(BASE).replace("stop: {iterations: 5}}",
                                                     f"stop: {{iterations: 5}}, probe: {probe}}}"))

    one = spec("{budget: 4%}")
    data = dataclasses.asdict(one)
    data.pop("source")
    del data["experiment"]["probe"]["steady_budget"]
    from testbed.spec.experiment import UNKEYED_AT_DEFAULT, Experiment
    for later in dataclasses.fields(Experiment):              # added later still, unset here
        if later.metadata.get(UNKEYED_AT_DEFAULT):
            del data["experiment"][later.name]
    for later in dataclasses.fields(S.Spec):
        if later.metadata.get(UNKEYED_AT_DEFAULT):
            del data[later.name]
    before = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:12]
    assert W.spec_key(one) == W.spec_key(spec("{budget: 4%, steady_budget: 4%}")) == before
    assert W.spec_key(spec("{budget: 4%, steady_budget: 2%}")) != before


def test_a_field_marked_unkeyed_at_default_leaves_the_data_only_when_off_its_default():
    import dataclasses

    from testbed.spec.experiment import UNKEYED_AT_DEFAULT

    @dataclasses.dataclass
    class Inner:
        a: int = 1
        new: float = dataclasses.field(default=None, metadata={UNKEYED_AT_DEFAULT: True})

    @dataclasses.dataclass
    class Outer:
        inner: Inner
        items: tuple = ()

    assert W.keyed(Outer(Inner(), (Inner(2, 0.5),))) == {"inner": {"a": 1}, "items": ({"a": 2, "new": 0.5},)}
    assert W.keyed(Outer(Inner(3), ())) == {"inner": {"a": 3}, "items": ()}


def test_a_sweep_resumes_skipping_completed_runs_and_retrying_failed_ones(tmp_path):
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))
    sweep_dir = str(tmp_path / "sweep")
    calls = []

    def run_one(planned, fail=("worker_dcs-3_seed-0",)):
        calls.append(planned.setting.label)
        folder = RunFolder.create(planned.folder, planned.spec, "")
        folder.set_status("failed" if planned.setting.label in fail else "completed")
        return folder.path

    first = W.run_sweep(r, sweep_dir, run_one)
    assert [e["status"] for e in first] == ["completed", "completed", "failed", "completed"]
    assert len(calls) == 4
    calls.clear()
    second = W.run_sweep(r, sweep_dir, lambda p: run_one(p, fail=()))
    assert calls == ["worker_dcs-3_seed-0"]
    assert [e["status"] for e in second] == ["skipped (already completed)"] * 2 + ["completed"] + \
        ["skipped (already completed)"]
    assert os.path.isfile(os.path.join(sweep_dir, "sweep.json"))


def test_a_run_whose_network_fails_to_build_is_recorded_as_failed_and_the_sweep_goes_on(tmp_path):
    from testbed.emulation.network import NetworkError
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))
    calls = []

    def run_one(planned):
        # As the runner does: the folder first, then the network, whose
        # failure is written to the status before the error rises.
        calls.append(planned.setting.label)
        folder = RunFolder.create(planned.folder, planned.spec, "")
        if planned.setting.label == "worker_dcs-2_seed-1":
            folder.set_status("failed", "NetworkError: ps-r: `ip link add` failed: File exists")
            raise NetworkError("ps-r: `ip link add` failed: File exists")
        folder.set_status("completed")
        return folder.path

    record = W.run_sweep(r, str(tmp_path / "sweep"), run_one)
    assert len(calls) == 4
    assert [e["status"] for e in record] == ["completed", "failed", "completed", "completed"]
    failed = record[1]
    assert failed["reason"] == "NetworkError: ps-r: `ip link add` failed: File exists"
    assert failed["run"] and os.path.dirname(failed["run"]) == W.plan(r, str(tmp_path / "sweep"))[1].folder
    assert "reason" not in record[0]


def test_an_error_before_any_run_folder_ends_the_sweep(tmp_path):
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))

    def run_one(planned):
        raise PermissionError("building the emulated network needs root")

    with pytest.raises(PermissionError):
        W.run_sweep(r, str(tmp_path / "sweep"), run_one)


VARIANTS = """
id: demo
base: base.yaml
axes:
  variant:
    - {name: star, experiment.overlay: ps}
    - {name: slow-b, experiment.seed: 3, bw_scale: 0.5}
  experiment.seed: [0, 1]
"""


def test_variants_bundle_several_paths_under_one_name(tmp_path):
    r = W.load_recipe(recipe_at(tmp_path, VARIANTS))
    assert [s.label for s in r.settings()] == ["star_seed-0", "star_seed-1", "slow-b_seed-0",
                                               "slow-b_seed-1"]
    star, slow = W.setting_document(r, r.settings()[0]), W.setting_document(r, r.settings()[2])
    assert star["experiment"]["overlay"] == "ps" and "overlay" not in slow["experiment"]
    assert [w["bw"] for w in slow["wan"]] == ["25mbit", "10mbit", "25mbit"]
    assert slow["experiment"]["seed"] == 0      # the later axis sets it after the variant


@pytest.mark.parametrize("body,msg", [
    ("id: x\nbase: base.yaml\naxes: {variant: [{experiment.seed: 1}]}\n", "with a name"),
    ("id: x\nbase: base.yaml\naxes: {variant: [{name: a}, {name: a}]}\n", "'a' is taken"),
    ("id: x\nbase: base.yaml\naxes: {variant: [{name: a, colour: 1}]}\n", "neither a dotted path"),
    ("id: x\nbase: base.yaml\naxes: {}\nbogus: 1\n", "bogus: unknown key; known keys: axes, base"),
    ("id: x\nbase: base.yaml\naxes: {}\nquik: {}\n", "quik: unknown key; did you mean 'quick'"),
    ("id: x\nbase: base.yaml\naxes: [experiment.seed]\n", "axes: must be a mapping"),
    ("id: x\naxes: {}\n", "base: missing"),
    ("id: x\nbase: nope.yaml\naxes: {}\n", "not found"),
    ("id: x\nbase: base.yaml\naxes: {colour: [1]}\n", "neither a dotted path"),
    ("id: x\nbase: base.yaml\naxes: {experiment.seed: []}\n", "non-empty list"),
    ("id: x\nbase: base.yaml\naxes: {experiment.sync: [magic]}\n", "setting sync-magic: experiment.sync"),
])
def test_recipe_mistakes_are_one_sentence(tmp_path, body, msg):
    with pytest.raises(W.RecipeError, match=msg):
        r = W.load_recipe(recipe_at(tmp_path, body))
        W.plan(r, str(tmp_path / "s"))


def test_a_refused_recipe_leaves_no_trace_and_keeps_what_was_there(tmp_path):
    # The second setting is refused after the first one's file was written.
    bad = "id: x\nbase: base.yaml\naxes: {experiment.sync: [ssgd, magic]}\n"
    sweep_dir = tmp_path / "runs" / "sweeps" / "x"
    with pytest.raises(W.RecipeError, match="setting sync-magic"):
        W.plan(W.load_recipe(recipe_at(tmp_path, bad)), str(sweep_dir))
    assert not (tmp_path / "runs").exists()
    # A sweep planned before keeps its folder and files; only this call's go.
    good = W.plan(W.load_recipe(recipe_at(tmp_path, RECIPE)), str(sweep_dir))
    before = sorted(os.listdir(sweep_dir / "specs"))
    with pytest.raises(W.RecipeError, match="setting sync-magic"):
        W.plan(W.load_recipe(recipe_at(tmp_path, bad)), str(sweep_dir))
    assert sorted(os.listdir(sweep_dir / "specs")) == before and len(before) == len(good) == 4


def test_a_list_valued_axis_gets_a_short_distinct_label():
    from testbed.sweeps.sweep import MAX_LABEL, Setting
    a = Setting((("dynamics", [{"trace": "/" + "x" * 300, "link": ["a", "b"]}]),
                 ("experiment.seed", 1)))
    b = Setting((("dynamics", [{"trace": "/" + "y" * 300, "link": ["a", "b"]}]),
                 ("experiment.seed", 1)))
    assert a.label != b.label and len(a.label) <= 30 and a.label.endswith("_seed-1")
    assert Setting((("dynamics", []),)).label == Setting((("dynamics", []),)).label
    long = Setting(tuple((f"experiment.k{i}", "v" * 20) for i in range(10)))
    assert len(long.label) == MAX_LABEL and long.label != Setting(long.values[:9]).label


def runs_that_end(monkeypatch, stopped_by, reason):
    """Replace the runner by one whose runs end at once, as `stopped_by`
    says, each with its folder written; returns the list of runs started."""
    from testbed.run import runner
    calls = []

    def run(spec, runs_root, delay_backend, show, say):
        calls.append(runs_root)
        folder = RunFolder.create(runs_root, spec, "")
        folder.set_status("failed", reason, stopped_by=stopped_by)
        return runner.Outcome("failed", reason, folder, stopped_by)

    monkeypatch.setattr(runner, "run", run)
    return calls


def test_ctrl_c_during_a_local_setting_ends_the_sweep(tmp_path, monkeypatch):
    from testbed.run import runend
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))
    # The runner turns Ctrl-C into an interrupted run with its folder written.
    calls = runs_that_end(monkeypatch, runend.INTERRUPTED, "interrupted by the user")
    with pytest.raises(KeyboardInterrupt):
        W.run_sweep(r, str(tmp_path / "sweep"), lambda p: W.run_locally(p, "auto"))
    assert len(calls) == 1           # the next settings never started


def test_ctrl_c_during_a_reproduced_setting_ends_the_recipe_too(tmp_path, monkeypatch):
    from testbed.run import runend
    from testbed.sweeps import reproduce
    path = recipe_at(tmp_path, RECIPE)
    monkeypatch.setattr(reproduce, "recipe_path", lambda recipe_id: path)
    calls = runs_that_end(monkeypatch, runend.INTERRUPTED, "interrupted by the user")
    with pytest.raises(KeyboardInterrupt):
        reproduce.reproduce("demo", False, str(tmp_path / "runs"))
    assert len(calls) == 1


def test_a_failed_setting_is_told_and_the_sweep_goes_on(tmp_path, monkeypatch):
    from testbed.run import runend
    r = W.load_recipe(recipe_at(tmp_path, RECIPE))
    calls = runs_that_end(monkeypatch, runend.AGENT_FAILURE, "peer a-s0 has been silent\nfor 60s")
    told = []
    record = W.run_sweep(r, str(tmp_path / "sweep"), lambda p: W.run_locally(p, "auto", told.append))
    assert len(calls) == 4 and [e["status"] for e in record] == ["failed"] * 4
    assert told[0] == "worker_dcs-2_seed-0: failed: peer a-s0 has been silent"
