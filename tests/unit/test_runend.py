"""Which stop ended a run, and whether it reached its target accuracy."""

import pytest

from testbed.run import runend
from testbed.run.runend import conclude, target_reached

STOPS = dict(target=0.9, max_iterations=400, max_time=180.0)


def test_target_reached_is_none_without_a_target_and_any_evaluation_counts():
    assert target_reached([0.95], None) is None
    assert target_reached([0.95], 0.0) is None
    assert target_reached([0.5, 0.91, 0.89], 0.9) is True    # the last one dipped; it was reached
    assert target_reached([0.5, 0.9], 0.9) is True           # exactly the target counts
    assert target_reached([0.5, 0.899], 0.9) is False
    assert target_reached([], 0.9) is False


def test_workers_that_finish_after_reaching_the_target_stopped_at_it():
    end = conclude(runend.WORKERS_FINISHED, accuracies=[0.65, 0.88, 0.914, 0.903], iterations=31,
                   **STOPS)
    assert (end.status, end.stopped_by, end.target_reached) == ("completed", "target_accuracy", True)
    assert end.reason == ("the workers stopped at the target accuracy after 31 iterations; "
                          "target accuracy 0.900 reached (best 0.914)")


def test_workers_that_finish_all_iterations_below_the_target_say_so():
    end = conclude(runend.WORKERS_FINISHED, accuracies=[0.5, 0.87], iterations=400, **STOPS)
    assert (end.status, end.stopped_by, end.target_reached) == ("completed", "iterations", False)
    assert end.reason == ("the workers ran all 400 iterations; "
                          "target accuracy 0.900 not reached (best 0.870)")


def test_all_iterations_without_a_target_leave_target_reached_unset():
    end = conclude(runend.WORKERS_FINISHED, accuracies=[0.5], iterations=400, target=0.0,
                   max_iterations=400)
    assert (end.status, end.stopped_by, end.target_reached) == ("completed", "iterations", None)
    assert end.reason == "the workers ran all 400 iterations"


def test_workers_that_quit_early_without_reaching_either_stop_fail_the_run():
    end = conclude(runend.WORKERS_FINISHED, accuracies=[0.5], iterations=12, **STOPS)
    assert (end.status, end.stopped_by, end.target_reached) == ("failed", "agent-failure", False)
    assert "12 of 400 iterations" in end.reason


def test_the_time_limit_completes_the_run_and_says_the_target_was_missed():
    end = conclude(runend.TIME, accuracies=[], iterations=57, **STOPS)
    assert (end.status, end.stopped_by, end.target_reached) == ("completed", "time", False)
    assert end.reason == ("the time limit of 180s ended the run after 57 iterations; "
                          "target accuracy 0.900 not reached (never evaluated)")


def test_a_time_limit_before_any_iteration_fails_the_run_so_a_sweep_runs_it_again():
    end = conclude(runend.TIME, accuracies=[], iterations=0, **STOPS)
    assert (end.status, end.stopped_by, end.target_reached) == ("failed", "time", False)
    assert end.reason == ("the time limit of 180s ended the run before any iteration finished; "
                          "target accuracy 0.900 not reached (never evaluated)")


def test_a_search_ended_by_its_time_limit_completes_only_if_a_coflow_finished():
    from testbed.run import search
    end = search.conclude(runend.TIME, "", [{"ev": "start"}, {"ev": "coflow"}], max_time=60.0)
    assert (end.status, end.stopped_by) == ("failed", "time")
    assert end.reason == "the time limit of 60s ended the search before any coflow finished"
    end = search.conclude(runend.TIME, "", [{"ev": "coflow_done"}] * 3, max_time=60.0)
    assert (end.status, end.reason) == ("completed", "the time limit of 60s ended the search after 3 coflows")


@pytest.mark.parametrize("seen", [runend.AGENT_FAILURE, runend.EMULATION_FAILURE, runend.INTERRUPTED,
                                  runend.ERROR])
def test_failures_keep_their_own_reason_and_still_tell_whether_the_target_was_reached(seen):
    end = conclude(seen, "agent tokyo-w1 was killed by SIGKILL", accuracies=[0.92], iterations=40,
                   **STOPS)
    assert (end.status, end.stopped_by, end.target_reached) == ("failed", seen, True)
    assert end.reason == "agent tokyo-w1 was killed by SIGKILL"


def test_an_unknown_ending_is_a_bug():
    with pytest.raises(ValueError):
        conclude("finished-somehow")


def test_the_status_line_says_which_stop_fired_and_whether_the_target_was_reached():
    from testbed.cli.tables import status_line
    assert status_line({"status": "completed", "stopped_by": "iterations", "target_reached": False}) \
        == "completed, stopped by iterations, target not reached"
    assert status_line({"status": "completed", "stopped_by": "time", "target_reached": None}) \
        == "completed, stopped by time"
    assert status_line({"status": "killed"}) == "killed"


def test_progress_is_read_from_the_run_folder_counting_only_workers_iterations(tmp_path):
    import json

    from testbed.records.runfolder import RunFolder
    from testbed.run.runner import training_progress
    (tmp_path / "agents").mkdir()

    def events(name, evs):
        (tmp_path / "agents" / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    events("a-w0", [{"ev": "start", "role": "worker"}, {"ev": "iter", "it": 0},
                    {"ev": "eval", "accuracy": 0.5}, {"ev": "iter", "it": 1}, {"ev": "eval", "accuracy": 0.7}])
    events("a-w1", [{"ev": "start", "role": "worker"}, {"ev": "iter", "it": 0}])
    events("a-s0", [{"ev": "start", "role": "server"}, {"ev": "iter", "it": 9}])
    assert training_progress(RunFolder(str(tmp_path))) == ([0.5, 0.7], 2)
