"""Sincronia's BSSI + greedy against the reference simulator's outputs, and
the coflow-sim command on them."""

import json
import os
import subprocess
import sys

import pytest

from agents.coflow.policies import make_policy
from testbed.coflow.simulator import StaticSource, simulate
from testbed.coflow.trace import TraceError, parse_trace, read_trace

DATA = os.path.join(os.path.dirname(__file__), "data", "sincronia")


def case(k):
    with open(os.path.join(DATA, f"case{k}.expected.json")) as f:
        return read_trace(os.path.join(DATA, f"case{k}.trace")), json.load(f)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_sincronia_reproduces_the_reference_order_and_every_cct(k):
    trace, expected = case(k)
    result = simulate(make_policy("sincronia"), trace.fabric, StaticSource(trace.coflows))
    assert result.order == expected["order"]
    assert {str(c): v for c, v in result.cct.items()} == pytest.approx(expected["cct"], abs=1e-9)
    assert result.avg_cct == pytest.approx(expected["avg_cct"], abs=1e-9)


def run_testbed(*args):
    return subprocess.run([sys.executable, "-m", "testbed.cli", *args], capture_output=True,
                          text=True, timeout=60)


def test_coflow_sim_prints_the_expected_json_of_a_reference_case():
    _, expected = case(0)
    r = run_testbed("coflow-sim", os.path.join(DATA, "case0.trace"), "--policy", "sincronia",
                    "--json")
    assert r.returncode == 0, r.stderr
    printed = json.loads(r.stdout)
    assert {k: printed[k] for k in ("order", "cct", "avg_cct")} == expected
    assert printed["lower_bound"]["avg_cct"] <= expected["avg_cct"]


def test_coflow_sim_prints_stage_times_when_the_trace_names_stages(tmp_path):
    trace = tmp_path / "staged.json"
    trace.write_text(json.dumps({"machines": 2, "coflows": [
        {"id": 1, "flows": [[0, 1, 2]], "task": "t0", "stage": "s0"},
        {"id": 2, "flows": [[0, 1, 1]], "task": "t0", "stage": "s0"},
        {"id": 3, "flows": [[1, 0, 3]], "stage": "x"}]}))
    r = run_testbed("coflow-sim", str(trace), "--policy", "sincronia", "--json")
    assert r.returncode == 0, r.stderr
    printed = json.loads(r.stdout)
    # One port each way: 2 goes first (1 unit), then 1 (2 more), 3 alone on the other side.
    assert printed["cct"] == {"1": 3.0, "2": 1.0, "3": 3.0}
    assert printed["sct"] == {"t0/s0": 3.0, "x": 3.0}
    assert printed["avg_sct"] == 3.0
    assert printed["lower_bound"]["avg_sct"] <= 3.0


@pytest.mark.parametrize("args, message", [
    (["--policy", "nope"], "error: unknown coflow policy 'nope'; available: beamer, fair, fifo-lm, "
                           "sincronia, varys, or module:attribute\n"),
    (["--policy", "fair", "--param", "speed=3"],
     "error: --param speed: fair has no parameter 'speed' (it has: none)\n"),
    (["--policy", "beamer", "--param", "ordering=random"],
     "error: --param ordering: 'random' must be one of stages, coflows\n"),
])
def test_coflow_sim_refuses_a_bad_policy_in_one_sentence_with_exit_2(args, message):
    r = run_testbed("coflow-sim", os.path.join(DATA, "case0.trace"), *args)
    assert (r.returncode, r.stderr, r.stdout) == (2, message, "")


def test_coflow_sim_refuses_a_bad_trace_in_one_sentence_with_exit_2(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("2 1\n1 0 2 1 1 0 1 5\n")
    r = run_testbed("coflow-sim", str(bad), "--policy", "fair")
    assert r.returncode == 2
    assert r.stderr == (f"error: {bad}: line 2: coflow 1 announces 2 flows but gives "
                        "1 (src dst size) triples\n")
    missing = run_testbed("coflow-sim", str(tmp_path / "none"), "--policy", "fair")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.count("\n") == 1


@pytest.mark.parametrize("text, message", [
    ("", "line 1 must be 'machines coflows', two whole numbers"),
    ("2 2\n1 0 1 1 1 0 1 5\n", "line 1 announces 2 coflows but 1 coflow lines follow"),
    ("2 1\n1 0 1 1 1 0 2 5\n", "line 2: flow destination 2 is not a machine 0..1"),
    ("2 1\n1 0 1 1 1 0 1 -5\n", "line 2: a flow's size must be above 0, not -5"),
    ("2 1\n1 0 1 1 1 0 1 five\n", "line 2: a flow's size is 'five', not a number"),
    ("2 2\n1 0 1 1 1 0 1 5\n1 0 1 1 1 0 1 5\n", "line 3: coflow id 1 is used twice"),
    ('{"machines": 2, "coflows": [{"id": 1, "flows": [[0, 1]]}]}',
     "coflows[0].flows must be a list of [src, dst, size]"),
    ('{"machines": 2, "coflows": [{"id": 1, "flows": [[0, 1, 1]], "colour": 3}]}',
     "coflows[0] has an unknown field 'colour'"),
    ('{"machines": 2, "capacity": {"ingress": [1]}, "coflows": []}',
     "capacity.ingress must list 2 numbers, one per machine"),
    ('{"machines": 2,', "the trace is not valid JSON (Expecting property name enclosed in "
                        "double quotes at line 1)"),
])
def test_a_bad_trace_is_one_value_error_sentence(text, message):
    with pytest.raises(TraceError) as e:
        parse_trace(text)
    assert str(e.value) == message


def test_the_json_trace_sums_repeated_pairs_and_reads_capacities():
    trace = parse_trace('{"machines": 2, "capacity": {"ingress": [2, 1], "egress": [1, 4]},'
                        ' "coflows": [{"id": "a", "arrival": 1.5, "flows": [[0, 1, 2], [0, 1, 3]],'
                        ' "weight": 2, "task": "t", "stage": "s", "job": "j"}]}')
    c = trace.coflows[0]
    assert (c.id, c.arrival, c.weight, c.stage_key, c.job) == ("a", 1.5, 2.0, ("t", "s"), "j")
    # ports: in0 in1 out0 out1
    assert list(trace.fabric.demand(c.flows)) == [5, 0, 0, 5]
    assert list(trace.fabric.capacity) == [2, 1, 1, 4]
    assert trace.fabric.isolation_time(c.flows) == 2.5
