"""Coflow traces: the reader of the formats below, into the big-switch
model of agents/coflow/model.py.

The network is one non-blocking switch; each machine has an ingress port
(its traffic entering the switch, i.e. what it sends) and an egress port
(what it receives), each with a capacity in size units per time unit.
Port p in 0..m-1 is machine p's ingress, m..2m-1 is machine p-m's egress,
as in Sincronia's reference simulator.  A flow from src to dst uses ports
src and m + dst.

Trace formats
-------------
Sincronia's text format (first non-blank character is not ``{``)::

    m n
    id arrival nflows nsources ndestinations (src dst size)*nflows

one line per coflow; every port has capacity 1.

A JSON format with stage information (first non-blank character is ``{``)::

    {"machines": 6,
     "capacity": 1,                       # or {"ingress": [..m], "egress": [..m]}
     "coflows": [{"id": 1, "arrival": 0, "flows": [[0, 2, 33], ...],
                  "weight": 1, "task": "t0", "stage": "s1", "job": "j3"}]}

``weight``, ``task``, ``stage`` and ``job`` are optional.  A stage is named
by (task, stage), so two tasks may both have a stage "s1".

Repeated (src, dst) pairs inside a coflow are summed in the demand (the
reference code overwrites them; the reference cases have none).
"""

import json
from dataclasses import dataclass

import numpy as np

from agents.coflow.model import Coflow, Fabric, Flow
from testbed.spec.textfile import read_small_text

MAX_TRACE_BYTES = 16 * 1024 * 1024


class TraceError(ValueError):
    """One sentence on what is wrong with a trace."""


@dataclass
class Trace:
    fabric: Fabric
    coflows: list


def _number(text, what):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise TraceError(f"{what} is {text!r}, not a number") from None
    if not np.isfinite(value):
        raise TraceError(f"{what} is {text!r}, not a finite number")
    return value


def _count(text, what):
    value = _number(text, what)
    if value != int(value) or value < 0:
        raise TraceError(f"{what} is {text!r}, not a whole number >= 0")
    return int(value)


def _flow(src, dst, size, machines, where):
    src = _count(src, f"{where}: a flow's source")
    dst = _count(dst, f"{where}: a flow's destination")
    size = _number(size, f"{where}: a flow's size")
    for name, v in (("source", src), ("destination", dst)):
        if v >= machines:
            raise TraceError(f"{where}: flow {name} {v} is not a machine 0..{machines - 1}")
    if size <= 0:
        raise TraceError(f"{where}: a flow's size must be above 0, not {size:g}")
    return Flow(src, dst, size)


def _check_coflow(c, seen, where):
    if c.arrival < 0:
        raise TraceError(f"{where}: arrival {c.arrival:g} is before 0")
    if c.weight <= 0:
        raise TraceError(f"{where}: weight must be above 0, not {c.weight:g}")
    if not c.flows:
        raise TraceError(f"{where}: coflow {c.id} has no flows")
    if c.id in seen:
        raise TraceError(f"{where}: coflow id {c.id} is used twice")
    seen.add(c.id)


def parse_sincronia(text):
    lines = [(i + 1, ln.split()) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines or len(lines[0][1]) != 2:
        raise TraceError("line 1 must be 'machines coflows', two whole numbers")
    m = _count(lines[0][1][0], "line 1: machines")
    n = _count(lines[0][1][1], "line 1: coflows")
    if m < 1:
        raise TraceError("line 1: a trace needs at least 1 machine")
    if len(lines) - 1 != n:
        raise TraceError(f"line 1 announces {n} coflows but {len(lines) - 1} coflow lines follow")
    coflows, seen = [], set()
    for lineno, words in lines[1:]:
        where = f"line {lineno}"
        if len(words) < 5:
            raise TraceError(f"{where}: a coflow line starts 'id arrival nflows nsources ndestinations'")
        cid = _count(words[0], f"{where}: coflow id")
        nflows = _count(words[2], f"{where}: nflows")
        if len(words) != 5 + 3 * nflows:
            raise TraceError(f"{where}: coflow {cid} announces {nflows} flows but gives "
                             f"{(len(words) - 5) / 3:g} (src dst size) triples")
        flows = tuple(_flow(*words[5 + 3 * k:8 + 3 * k], m, where) for k in range(nflows))
        c = Coflow(cid, _number(words[1], f"{where}: arrival"), flows)
        _check_coflow(c, seen, where)
        coflows.append(c)
    return Trace(Fabric(m), coflows)


def _capacity(value, m):
    if value is None:
        return None, None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        caps = [float(value)] * m
        ing, egr = caps, caps
    elif isinstance(value, dict) and set(value) <= {"ingress", "egress"}:
        ing = value.get("ingress", [1.0] * m)
        egr = value.get("egress", [1.0] * m)
    else:
        raise TraceError("capacity must be a number or {\"ingress\": [...], \"egress\": [...]}")
    for name, caps in (("ingress", ing), ("egress", egr)):
        if not isinstance(caps, list) or len(caps) != m:
            raise TraceError(f"capacity.{name} must list {m} numbers, one per machine")
        for v in caps:
            if _number(v, f"capacity.{name}") <= 0:
                raise TraceError(f"capacity.{name} must be above 0 everywhere")
    return [float(v) for v in ing], [float(v) for v in egr]


def parse_json(text):
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceError(f"the trace is not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict) or "machines" not in data or "coflows" not in data:
        raise TraceError("a JSON trace is an object with 'machines' and 'coflows'")
    m = _count(data["machines"], "machines")
    if m < 1:
        raise TraceError("a trace needs at least 1 machine")
    ing, egr = _capacity(data.get("capacity"), m)
    if not isinstance(data["coflows"], list):
        raise TraceError("'coflows' must be a list")
    coflows, seen = [], set()
    for k, item in enumerate(data["coflows"]):
        where = f"coflows[{k}]"
        if not isinstance(item, dict) or "flows" not in item or "id" not in item:
            raise TraceError(f"{where} must be an object with 'id' and 'flows'")
        unknown = set(item) - {"id", "arrival", "flows", "weight", "job", "stage", "task"}
        if unknown:
            raise TraceError(f"{where} has an unknown field {sorted(unknown)[0]!r}")
        if not isinstance(item["flows"], list) or not all(
                isinstance(f, list) and len(f) == 3 for f in item["flows"]):
            raise TraceError(f"{where}.flows must be a list of [src, dst, size]")
        if not isinstance(item["id"], (int, str)) or isinstance(item["id"], bool):
            raise TraceError(f"{where}.id must be a number or a string")
        flows = tuple(_flow(*f, m, where) for f in item["flows"])
        c = Coflow(item["id"], _number(item.get("arrival", 0), f"{where}.arrival"), flows,
                   weight=_number(item.get("weight", 1), f"{where}.weight"),
                   job=item.get("job"), stage=item.get("stage"), task=item.get("task"))
        _check_coflow(c, seen, where)
        coflows.append(c)
    return Trace(Fabric(m, ing, egr), coflows)


def parse_trace(text):
    return parse_json(text) if text.lstrip().startswith("{") else parse_sincronia(text)


def read_trace(path):
    """The trace in `path`; TraceError (a ValueError) with one sentence if it is unusable."""
    return parse_trace(read_small_text(path, f"trace {path}", MAX_TRACE_BYTES))
