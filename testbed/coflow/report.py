"""One simulation of a trace under a policy, as the JSON-ready dict the
`coflow-sim` command prints (the shape of Sincronia's expected outputs)."""

from agents.coflow.policies import make_policy
from testbed.coflow.bounds import trace_bounds
from testbed.coflow.simulator import StaticSource, simulate

# Printed times are rounded here so float dust never shows (148.0, not 147.99999999999997).
DIGITS = 9


def _stage_name(key):
    task, stage = key
    return str(stage) if task is None else f"{task}/{stage}"


def simulate_trace(trace, policy, **params):
    result = simulate(make_policy(policy, **params), trace.fabric, StaticSource(trace.coflows))
    bound = trace_bounds(trace.coflows, trace.fabric)
    out = {"order": result.order,
           "cct": {str(c.id): round(result.cct[c.id], DIGITS) for c in trace.coflows},
           "avg_cct": round(result.avg_cct, DIGITS)}
    if result.sct:
        out["sct"] = {_stage_name(k): round(v, DIGITS) for k, v in result.sct.items()}
        out["avg_sct"] = round(result.avg_sct, DIGITS)
    out["lower_bound"] = {k: round(v, DIGITS) for k, v in bound.items() if v is not None}
    return out
