"""What the report and the comparison say about a run, from hand-built run folders."""

import json
import os

import pytest
from rich.console import Console

from testbed.cli import tables
from testbed.analysis import report, wan
from agents.planning.wan import GOODPUT_SHARE
from testbed.records.runfolder import RunFolder

WALL0 = 1_800_000_000.0      # wall clock at monotonic time 0 of the hand-built runs
SPEC = {"name": "quickstart",
        "datacenters": [{"name": "virginia", "workers": 1, "servers": 1},
                        {"name": "tokyo", "workers": 2}],
        "wan": [{"a": "virginia", "b": "tokyo", "ab": {"rate": 50e6}, "ba": {"rate": 50e6}}],
        "experiment": {"sync": "ssgd", "overlay": "ps"}}


def write_lines(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def run_folder(root, name, iterations=True):
    path = os.path.join(root, name)
    os.makedirs(os.path.join(path, "agents"))
    folder = RunFolder(path)
    folder.write_json("spec.json", SPEC)
    folder.set_status("completed")
    event = {"agent": "tokyo-w0", "ev": "start", "role": "worker", "t": 0.0, "wall": WALL0}
    events = [event]
    if iterations:
        events += [{"agent": "tokyo-w0", "ev": "iter", "it": i, "t": 1.0 + i, "wall": WALL0 + 1 + i,
                    "compute": 0.1, "comm": 0.5, "wait": 0.1, "sync": 0.6} for i in range(20)]
    folder.write_json("agents/tokyo-w0.json", {"role": "worker"})
    write_lines(folder.agent_file("tokyo-w0", "jsonl"), events)
    return folder


def test_a_step_function_averages_by_the_time_each_value_held():
    history = [(0.0, 50e6), (10.0, 5e6)]
    assert wan.time_weighted_mean(history, 0.0, 20.0) == pytest.approx(27.5e6)
    assert wan.time_weighted_mean(history, 5.0, 15.0) == pytest.approx(27.5e6)
    assert wan.time_weighted_mean(history, 12.0, 20.0) == pytest.approx(5e6)
    assert wan.time_weighted_mean([(3.0, 8e6)], 0.0, 2.0) == pytest.approx(8e6)


def test_a_link_is_compared_with_its_configured_rate_over_the_same_time(tmp_path):
    # virginia -> tokyo: 50 Mbit/s for 10 s, then cut to 5 (links.jsonl);
    # it carried 30 Mbit/s, then 4.
    folder = run_folder(str(tmp_path), "20261130-093012-quickstart")
    samples, sent = [], 0
    for t in range(21):
        rate = 50e6 if t <= 10 else 5e6
        samples.append({"t": float(t), "src": "virginia", "dst": "tokyo", "rate": rate,
                        "up": True, "bytes": sent})
        sent += (30e6 if t < 10 else 4e6) / 8
    write_lines(folder.link_samples, samples)
    write_lines(folder.links, [{"t": 10.0, "wall": WALL0 + 10.0, "src": "virginia", "dst": "tokyo",
                                "rate": 5e6, "source": "dynamics"}])
    wan = report.summarize(folder)["wan"]["virginia->tokyo"]
    assert wan["mean_throughput"] == pytest.approx((10 * 30e6 + 10 * 4e6) / 20)    # 17 Mbit/s
    assert wan["configured_rate_mean"] == pytest.approx(27.5e6)
    assert wan["configured_rate_final"] == 5e6


def test_a_run_in_which_no_iteration_finished_says_so_and_keeps_its_worker_count(tmp_path):
    folder = run_folder(str(tmp_path), "20261130-093012-quickstart", iterations=False)
    summary = report.summarize(folder)
    assert summary["workers"] == 3 and summary["iterations"] == 0
    console = Console(width=200, record=True)
    console.print(tables.summary_table(summary, "run"))
    text = console.export_text()
    assert "3 workers" in text
    assert "none finished" in text


def test_compare_shows_whole_run_names_in_a_narrow_terminal(tmp_path):
    names = ["20261130-093012-quickstart", "20261130-094501-quickstart"]
    rows = [{"run": n, **{c: None for c in report.COMPARE_COLUMNS[1:]}} for n in names]
    console = Console(width=80, record=True)
    console.print(tables.compare_table(rows, report.COMPARE_COLUMNS))
    text = console.export_text()
    for n in names:
        assert n in text


def one_mb_run_folder(tmp_path):
    """The hand-built run with no delay on its link and a model of 1 MB."""
    folder = run_folder(str(tmp_path), "20261130-093012-quickstart")
    spec = json.loads(json.dumps(SPEC))
    for direction in ("ab", "ba"):
        spec["wan"][0][direction]["delay"] = 0.0
    folder.write_json("spec.json", spec)
    with open(folder.agent_file("tokyo-w0", "jsonl"), "a") as f:
        f.write(json.dumps({"agent": "tokyo-w0", "ev": "start", "role": "worker", "t": 0.0,
                            "wall": WALL0, "params": 250_000}) + "\n")
    return folder


def test_a_summary_puts_the_sync_time_next_to_t_lb_and_t_opt(tmp_path):
    folder = one_mb_run_folder(tmp_path)
    summary = report.summarize(folder)
    # Two DCs with workers on one 50 Mbit/s link each way, no delay: each must
    # get the other's 1 MB, at 50e6 * GOODPUT_SHARE / 8 bytes/s, and the
    # exchange of the two sums achieves it.
    alone = 1e6 / (50e6 * GOODPUT_SHARE / 8)
    assert summary["sync_t_lb"] == pytest.approx(alone, rel=1e-6)
    assert summary["sync_t_opt"] == pytest.approx(alone, rel=1e-6)
    assert summary["sync_over_t_lb"] == pytest.approx(0.6 / alone)
    # From the last worker's start: the 0.1 s it waited for is left out.
    assert summary["sync_from_last_start_over_t_lb"] == pytest.approx(0.5 / alone)
    # Kept for the next report of the same run.
    assert folder.read_json("bounds.json")["t_lb"] == summary["sync_t_lb"]


def test_a_run_whose_link_changed_is_also_held_to_the_links_while_each_sync_ran(tmp_path):
    folder = one_mb_run_folder(tmp_path)
    # virginia -> tokyo falls to a tenth at 10.45 s.  Iteration i syncs over
    # [0.4 + i, 1 + i] pushed to pulled, [0.5 + i, 1 + i] from its last start.
    write_lines(folder.links, [{"t": 10.45, "wall": WALL0 + 10.45, "src": "virginia", "dst": "tokyo",
                                "rate": 5e6, "source": "dynamics"}])
    summary = report.summarize(folder)
    rate = 50e6 * GOODPUT_SHARE / 8
    alone = 1e6 / rate
    assert summary["sync_t_lb"] == pytest.approx(alone, rel=1e-6)         # as configured
    # Iterations 1-9 before the fall (alone), 11-19 after it (10 alone), and 10
    # pushed to pulled across it: 0.05 s at the old rate, the rest at a tenth.
    across = 0.05 + (1e6 - 0.05 * rate) / (rate / 10)
    assert summary["sync_t_lb_as_run"] == pytest.approx(across, rel=1e-6)
    assert summary["sync_over_t_lb_as_run"] == pytest.approx(0.6 / across, rel=1e-6)
    # From the last start iteration 10 began after the fall: ten of 19 at 10 alone.
    assert summary["sync_from_last_start_over_t_lb_as_run"] == pytest.approx(0.5 / (10 * alone), rel=1e-6)
    console = Console(width=300, record=True)
    console.print(tables.summary_table(summary, "run"))
    assert "x t_lb of the links as they were while each synchronization ran" in console.export_text()
    assert folder.read_json("bounds_as_run.json")["values"][0] == summary["sync_t_lb_as_run"]


def test_a_run_whose_links_stayed_as_configured_has_no_bounds_as_run(tmp_path):
    summary = report.summarize(run_folder(str(tmp_path), "20261130-093012-quickstart"))
    assert summary["sync_t_lb_as_run"] is None and summary["sync_over_t_lb_as_run"] is None
    console = Console(width=300, record=True)
    console.print(tables.summary_table(summary, "run"))
    assert "the links stayed as configured" in console.export_text()


def test_the_sync_time_from_the_last_start_leaves_out_the_wait_for_the_last_worker():
    # Iteration 0 is left out; in 1 and 2 the worker that waited for the
    # other is the slowest push-to-pull, but not the slowest from the last start.
    iters = [{"it": 0, "sync": 9.0, "wait": 0.0},
             {"it": 1, "sync": 5.0, "wait": 2.0}, {"it": 1, "sync": 4.0, "wait": 0.0},
             {"it": 2, "sync": 6.0, "wait": 3.5}, {"it": 2, "sync": 2.0, "wait": 0.0}]
    assert report.sync_time(iters) == pytest.approx((5.0 + 6.0) / 2)
    assert report.sync_time(iters, from_last_start=True) == pytest.approx((4.0 + 2.5) / 2)


def test_compute_during_synchronization_is_not_counted_twice_in_the_iteration_time(tmp_path):
    folder = run_folder(str(tmp_path), "20261130-093012-quickstart")
    events = [{"agent": "tokyo-w0", "ev": "iter", "it": i, "t": 1.0 + i, "wall": WALL0 + 1 + i,
               "compute": 0.5, "comm": 0.6, "wait": 0.0, "sync": 0.6, "busy": 0.45}
              for i in range(5)]
    write_lines(folder.agent_file("tokyo-w0", "jsonl"), events)
    # 0.5 s computing, 0.45 of it while the 0.6 s synchronization ran: 0.65 s a round.
    assert report.summarize(folder)["iteration_time"] == pytest.approx(0.65)


def test_agents_are_ready_counted_from_the_runs_start_or_else_from_the_network_being_up(tmp_path):
    # The worker logs `start` at monotonic 0.0; the runner started 4.5 s
    # before, and the network was up 2.5 s before.
    folder = run_folder(str(tmp_path), "r")
    events = wan.load(folder)[0]
    write_lines(folder.file("runner.jsonl"), [{"agent": "runner", "ev": "starting", "t": -4.5},
                                              {"agent": "runner", "ev": "network_up", "t": -2.5}])
    assert wan.agents_ready(folder, events) == 4.5
    write_lines(folder.file("runner.jsonl"), [{"agent": "runner", "ev": "network_up", "t": -2.5}])
    assert wan.agents_ready(folder, events) == 2.5
