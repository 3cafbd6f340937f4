"""A finished run's synchronizations read from its folder and held against
the bound of the links while each ran, on a hand-built run folder."""

import json
import os

import pytest

from testbed.analysis.iterations import per_iteration, steady_ratios
from tests.unit.test_bound_timeline import M, two_dcs


def write_lines(path, records):
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def test_a_run_folder_gives_each_synchronization_of_the_first_workers_against_its_links(tmp_path):
    run = str(tmp_path)
    os.makedirs(os.path.join(run, "agents"))
    with open(os.path.join(run, "spec.json"), "w") as f:
        json.dump(two_dcs(), f)
    # At wall 100 a->b falls to a quarter of its 1 MB/s.
    write_lines(os.path.join(run, "links.jsonl"),
                [{"wall": 100.0, "src": "a", "dst": "b", "rate": 2e6 * 1514 / 1448}])
    write_lines(os.path.join(run, "agents", "a-w0.jsonl"),
                [{"ev": "iter", "it": 0, "wall": 50.0, "sync": 2.0, "wait": 0.0},
                 {"ev": "iter", "it": 1, "wall": 106.0, "sync": 9.0, "wait": 4.0}])
    write_lines(os.path.join(run, "agents", "b-w0.jsonl"),
                [{"ev": "start", "role": "worker"},
                 {"ev": "iter", "it": 0, "wall": 50.0, "sync": 1.5, "wait": 0.0},
                 {"ev": "iter", "it": 1, "wall": 106.0, "sync": 5.0, "wait": 0.0}])
    # A second worker of b is not read: a DC's first worker stands for it.
    write_lines(os.path.join(run, "agents", "b-w1.jsonl"),
                [{"ev": "iter", "it": 1, "wall": 120.0, "sync": 30.0, "wait": 0.0}])
    from_last_start, push_to_pull, spec, changes = per_iteration(run, M)
    # Iteration 0 before the fall: 1 s.  Iteration 1 from its last start at 101,
    # after the fall: 4 s; pushed to pulled from 97, 3 s at 1 MB/s carry the 1 MB: 1 s.
    assert from_last_start == [(0, 2.0, pytest.approx(1.0)), (1, 5.0, pytest.approx(4.0))]
    assert push_to_pull == [(0, 2.0, pytest.approx(1.0)), (1, 9.0, pytest.approx(1.0))]
    assert spec == two_dcs() and len(changes) == 1
    assert steady_ratios(from_last_start) == [(1, 5.0, pytest.approx(4.0))]


def test_a_run_whose_links_never_changed_has_no_link_file_and_keeps_its_bound(tmp_path):
    run = str(tmp_path)
    os.makedirs(os.path.join(run, "agents"))
    with open(os.path.join(run, "spec.json"), "w") as f:
        json.dump(two_dcs(), f)
    write_lines(os.path.join(run, "agents", "a-w0.jsonl"),
                [{"ev": "iter", "it": 1, "wall": 10.0, "sync": 3.0, "wait": 0.0}])
    assert per_iteration(run, M)[0] == [(1, 3.0, pytest.approx(1.0))]
    assert steady_ratios([(0, 1.0, 1.0), (2, 1.0, None)]) == []
