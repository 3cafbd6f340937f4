"""A live change of a WAN link is one step: changes from the dynamics and
from a console at once leave the record, links.jsonl and the kernel
agreeing; a change refused or failed half-way leaves the link as it was."""

import json
import os
import re
import signal
import threading
import time

import pytest

from agents.events import read_events
from testbed.emulation import network, shaping
from testbed.emulation.commands import CommandError
from testbed.run import control, runner
from testbed.spec.dynamics import LinkAction
from testbed.spec.units import parse_rate
from tests.mininet.helpers import spec_of

pytestmark = pytest.mark.mininet

TWO_DC = """
datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
wan: [{between: [east, west], bw: 20mbit, delay: 20ms}]
"""
PAIRS = (("east", "west"), ("west", "east"))


class Speeds:
    def set(self, workers, speed, source):
        pass


def kernel_holds(net, src, dst):
    """(HTB rate, the leaf queue's limit) of the src->dst egress, read with tc."""
    node, dev, _, _ = net.egress(src, dst)
    classes = network.run_in(node, ["tc", "class", "show", "dev", dev])
    rate = parse_rate(re.search(r"class htb 1:1 .*? rate (\S+)", classes).group(1).lower())
    (leaf,) = [q for q in json.loads(network.run_in(node, ["tc", "-j", "qdisc", "show", "dev", dev]))
               if q["handle"] == "10:"]
    return rate, leaf["options"]["limit"]


def limit_of(net, d):
    """The leaf's limit a direction calls for: bytes of a FIFO, frames of netem."""
    return shaping.netem_limit(d) if net.backend.name == "netem" else d.queue


def delay_line_holds(net, src, dst):
    """(delay, jitter, loss) the delay line applies to src->dst, or None with netem."""
    if not net.backend.uses_relays:
        return None
    _, _, w, key = net.egress(src, dst)
    d = net.backend.stats()[w.index]["dirs"][key]
    return d["delay"], d["jitter"], d["loss"]


def assert_agree(net, log_path):
    """The record, the last links.jsonl entry and the kernel say the same
    of each direction."""
    events = read_events(log_path)
    for src, dst in PAIRS:
        d = net.current[(src, dst)]
        (last, *_) = [e for e in reversed(events) if (e["src"], e["dst"]) == (src, dst)] or [None]
        if last is not None:
            assert (last["rate"], last["delay"], last["queue"]) == (d.rate, d.delay, d.queue), \
                (src, dst, last, d)
        rate, limit = kernel_holds(net, src, dst)
        assert rate == d.rate, (src, dst, rate, d)
        assert limit == limit_of(net, d), (src, dst, limit, d)
        held = delay_line_holds(net, src, dst)
        assert held is None or held == (d.delay, d.jitter, d.effective_loss), (src, dst, held, d)


@pytest.fixture(scope="module")
def two_dc(tmp_path_factory):
    log_path = str(tmp_path_factory.mktemp("live") / "links.jsonl")
    with network.build(spec_of(TWO_DC), link_log=log_path) as net:
        yield net, log_path


def test_dynamics_and_console_changes_at_once_leave_record_log_and_kernel_agreeing(two_dc, tmp_path):
    net, log_path = two_dc
    failures = []
    engine = runner.dynamics_engine(net, Speeds(), failures.append)
    engine.run([], horizon=600)
    commands = control.Commands(net, engine, Speeds().set, str(tmp_path))
    rates = [5e6, 8e6, 12e6, 20e6]
    k = 0
    for _ in range(3):
        # The dynamics change the rate every 5 ms, both ways or one (faster
        # than changes are made, so they queue up); the console changes rate
        # and delay as fast as it is answered until the dynamics are done,
        # so the two end together.
        now = engine.now()
        engine.add([LinkAction(t=now + 0.005 * j, a="east", b="west", both=j % 3 != 0,
                               rate=rates[j % 4]) for j in range(100)])
        deadline = time.monotonic() + 30
        while engine._pending and time.monotonic() < deadline:
            words = ["link", "east", "west", "bw", f"{3 + k % 7}mbit", "delay", f"{10 + k % 5}ms"]
            commands.execute(" ".join(words + (["oneway"] if k % 2 else [])), "console")
            k += 1
        time.sleep(0.1)          # the dynamics' last change is made
        assert failures == [] and not engine._pending
        assert_agree(net, log_path)
    engine.stop()
    assert {e["source"] for e in read_events(log_path)} == {"dynamics", "console"} and k > 15


@pytest.mark.parametrize("words,says", [
    ("bw 100000gbit", "bw: '100000gbit' is above the 100gbit a link may have"),
    ("bw 3000gbit", "bw: '3000gbit' is above the 100gbit a link may have"),
    ("delay 100000s", "delay: '100000s': must be between 0 and 60s"),
    ("bw 100gbit delay 30s", "east-west: 1 round-trip BDP at 100gbit and 30s is 750000000000 bytes, "
                             "over the 1gib a queue may hold"),
    ("jitter 30ms", "east-west: jitter 30ms must be at least zero and at most the delay, 20ms"),
])
def test_a_change_beyond_topo_yaml_s_bounds_is_one_sentence_and_touches_nothing(two_dc, tmp_path,
                                                                               words, says):
    net, log_path = two_dc
    net.change_link("east", "west", rate=20e6, delay=0.02)
    before = {pair: (kernel_holds(net, *pair), delay_line_holds(net, *pair)) for pair in PAIRS}
    logged = len(read_events(log_path))
    commands = control.Commands(net, None, Speeds().set, str(tmp_path))
    with pytest.raises(CommandError) as refused:
        commands.execute(f"link east west {words}", "console")
    assert str(refused.value).removeprefix("the link was not changed: ") == says
    assert {pair: (kernel_holds(net, *pair), delay_line_holds(net, *pair)) for pair in PAIRS} == before
    assert len(read_events(log_path)) == logged


def test_a_change_that_fails_half_way_leaves_the_link_as_it_was(tmp_path):
    log_path = str(tmp_path / "links.jsonl")
    with network.build(spec_of(TWO_DC), link_log=log_path) as net:
        before = {pair: (kernel_holds(net, *pair), delay_line_holds(net, *pair)) for pair in PAIRS}
        record = dict(net.current)
        # The west -> east leaf goes away behind the network's back: its
        # change fails after every step east -> west took (rate, queue,
        # delay line) and west -> east's rate.
        node, dev, _, _ = net.egress("west", "east")
        network.run_in(node, ["tc", "qdisc", "del", "dev", dev, "parent", shaping.DATA_CLASS, "handle", shaping.LEAF])
        commands = control.Commands(net, None, Speeds().set, str(tmp_path))
        with pytest.raises(CommandError, match=r"^the link was not changed: .*tc qdisc change"):
            commands.execute("link east west bw 5mbit delay 40ms", "console")
        assert net.current == record and read_events(log_path) == []
        assert kernel_holds(net, "east", "west") == before[("east", "west")][0]
        assert delay_line_holds(net, "east", "west") == before[("east", "west")][1]
        classes = network.run_in(node, ["tc", "class", "show", "dev", dev])
        assert "rate 20Mbit" in classes, classes


def test_a_delay_line_that_answers_late_ends_with_the_link_as_it_was(tmp_path):
    """A request the delay line did not answer in time may still be read
    later: the change is undone after it, so what it reads last is the old
    setting."""
    log_path = str(tmp_path / "links.jsonl")
    with network.build(spec_of(TWO_DC), link_log=log_path) as net:
        if not net.backend.uses_relays:
            pytest.skip("netem carries the delay in the kernel: no delay line to answer late")
        (proc, *_) = net.backend.procs.values()
        before = {pair: (kernel_holds(net, *pair), delay_line_holds(net, *pair)) for pair in PAIRS}
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(network.DelayError, match="does not answer"):
                net.change_link("east", "west", rate=5e6, delay=0.04)
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert {pair: (kernel_holds(net, *pair), delay_line_holds(net, *pair)) for pair in PAIRS} == before
        assert read_events(log_path) == []


def test_a_cut_and_restored_link_agrees_everywhere(two_dc):
    net, log_path = two_dc
    net.change_link("east", "west", up=False, source="console")
    assert_agree(net, log_path)
    assert delay_line_holds(net, "east", "west") in (None, (net.current[("east", "west")].delay, 0.0, 1.0))
    net.change_link("east", "west", up=True, source="console")
    assert_agree(net, log_path)

