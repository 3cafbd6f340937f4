"""A sweep's records as `keep` writes them and `load` reads them back: the
setting, the summary, the iterations a recipe timed and whatever else its
`extra` drew from the run folder; a run that did not complete is listed
as failed and keeps no folder."""

import json

from testbed.analysis import records


def run_folder(where, name, overlay):
    folder = where / name
    folder.mkdir()
    # `programs` marks a run without the workers' evaluations to read.
    (folder / "summary.json").write_text(json.dumps({"overlay": overlay, "programs": 1}))
    return str(folder)


def test_keep_writes_what_load_reads_and_extra_only_where_given(tmp_path):
    rows = [{"label": "a", "status": "completed", "setting": {"seed": 3},
             "run": run_folder(tmp_path, "run-a", "planner")},
            {"label": "b", "status": "completed", "setting": {"seed": 4},
             "run": run_folder(tmp_path, "run-b", "ps")},
            {"label": "c", "status": "failed", "setting": {"seed": 5}}]
    runs_dir = tmp_path / "runs"

    def steps(run, summary):
        return [(0, 5.0, 4.0, 1.0), (1, 2.0, 1.5, 1.0)]

    def extra(run, summary):
        return {"planned_true_s": 1.25, "from": run} if summary["overlay"] == "planner" else None

    records.keep(rows, str(runs_dir), steps=steps, extra=extra)
    kept, failed = records.load(str(runs_dir))
    assert [r.label for r in kept] == ["a", "b"] and failed == [{"label": "c", "setting": {"seed": 5}}]
    a, b = kept
    assert a.extra == {"planned_true_s": 1.25, "from": rows[0]["run"]} and b.extra == {}
    assert not (runs_dir / "b" / "extra.json").exists()
    assert a.setting == {"seed": 3} and a.summary["overlay"] == "planner"
    assert a.steps[1] == {"it": 1, "sync_s": 2.0, "from_last_start_s": 1.5, "t_lb_s": 1.0}
    assert a.sync() == {"sync": 1.5, "t_lb": 1.0, "over": 1.5}
