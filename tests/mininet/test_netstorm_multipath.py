"""NetStorm's multipath on the real emulated WAN: when the direct link
backs up, messages take the auxiliary path through the third DC (the
kernel's byte counters on that path show it), and the model every worker
ends with is bit-identical to the one of a run without detours."""

import os

import pytest

from agents.events import read_events
from tests.mininet.helpers import run_topology

pytestmark = pytest.mark.mininet

# a-b is slow and a, b both send it several pieces per iteration, so its
# queues back up; a-c-b is fast.  The policy is frozen at the first one,
# made before any speed is known (no probes): direct links are primary.
TOPOLOGY = """
name: multipath
datacenters:
  - {{name: a, servers: 1, workers: 1}}
  - {{name: b, servers: 1, workers: 1}}
  - {{name: c, servers: 1, workers: 1}}
wan:
  - {{between: [a, b], bw: 10mbit, delay: 5ms}}
  - {{between: [a, c], bw: 100mbit, delay: 5ms}}
  - {{between: [b, c], bw: 100mbit, delay: 5ms}}
experiment:
  sync: ssgd
  overlay: netstorm
  overlay_options: {{piece: 62500, replan: 0, multipath: {multipath}}}
  workload: synthetic
  model: flat-2000000
  compute_time: 10ms
  stop: {{iterations: 3, time: 3min}}
"""


def run(tmp_path, multipath):
    folder, summary = run_topology(tmp_path, f"mp{multipath}", TOPOLOGY.format(multipath=multipath),
                                   timeout=300)

    def done(agent):
        (e,) = [e for e in read_events(os.path.join(folder, "agents", f"{agent}.jsonl"))
                if e["ev"] == "done"]
        return e

    return summary, done


def test_a_backed_up_primary_link_sends_pieces_over_the_auxiliary_path_bit_identically(tmp_path):
    off, done_off = run(tmp_path, 0)
    on, done_on = run(tmp_path, 1)
    assert done_off("a-s0")["detoured"] == done_off("b-s0")["detoured"] == 0
    detoured = done_on("a-s0")["detoured"] + done_on("b-s0")["detoured"]
    assert detoured > 0 and done_on("c-s0")["relayed"] >= detoured
    # Every detour is a 250 KB piece crossing a->c then c->b (or b->c, c->a).
    piece = 62500 * 4
    extra = sum(on["wan"][d]["bytes"] - off["wan"][d]["bytes"]
                for d in ("a->c", "c->b", "b->c", "c->a"))
    assert extra >= 2 * detoured * piece * 0.9
    assert on["wan"]["a->b"]["bytes"] + on["wan"]["b->a"]["bytes"] < \
        off["wan"]["a->b"]["bytes"] + off["wan"]["b->a"]["bytes"] - detoured * piece * 0.9
    models = {done(w)["model"] for done in (done_off, done_on) for w in ("a-w0", "b-w0", "c-w0")}
    assert len(models) == 1
