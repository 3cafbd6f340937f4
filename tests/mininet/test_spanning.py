"""One WAN over two machines: namespaces stand for the machines
(tests/mininet/machines.py), each with its own Ray node, underlay address
and node server; the quickstart's DCs are split between them, so two of
its three links cross machines through VXLAN tunnels."""

import glob
import json
import os
import signal
import subprocess
import time

import pytest

from agents.planning.wan import GOODPUT_SHARE
from testbed import spec as specmod
from testbed.run import runner
from testbed.spec.overrides import assignment
from tests.mininet.helpers import ROOT, cli_argv, topology
from tests.mininet.machines import NODE_MODULE, NamespaceMachines, cmdline, pids_in
from tests.ports import free_port
from tests.stalls import Run, judge

pytestmark = pytest.mark.mininet

SECONDS = 3.0
RTT_SLACK = 0.0002          # a link's RTT off its configured delays, at most
GOODPUT_SLACK = 0.01        # a direction's goodput off its expected, at most
SPLIT = {"virginia": "a", "frankfurt": "a", "tokyo": "b"}
PAIRS = (("virginia", "frankfurt"), ("virginia", "tokyo"), ("frankfurt", "tokyo"))

# The quickstart stopped after a fixed number of iterations (so two runs do
# the same arithmetic), with a rate change on a crossing link mid-run.
QUICKSTART_STOP = "stop: {accuracy: 0.9, iterations: 400, time: 3min}"
FIXED_STOP = "stop: {iterations: 40, time: 2min}"
DYNAMICS = "dynamics:\n  - {at: 3s, link: [virginia, tokyo], bw: 10mbit}\n"
# A --set the machines must apply as the driver did (they refuse a topology
# that reads differently).
OVERRIDE = "lan.bw=900mbit"


@pytest.fixture(scope="module")
def machines():
    m = NamespaceMachines(2)
    try:
        yield m.up(free_port())
    finally:
        m.down()


def places(m):
    out = []
    for dc, which in SPLIT.items():
        out += ["--place", f"{dc}={m.address[m.names[ord(which) - ord('a')]]}"]
    return out


# Measured on the network over the two machines: per link the least RTT of
# 20 pings between its routers (what the link adds to its configured delays,
# free of the delay lines' scheduling noise that a median holds), per
# direction TCP's goodput over 4 s as selftest measures it (a receiver's
# one-second counts swing with when it is scheduled); each with the share
# of the CPU the hypervisor took meanwhile.
MEASURE = """
import json, re, sys
from testbed import spec as specmod
from testbed.emulation import measure
from testbed.spanning import span
from testbed.spanning.machines import Cluster
spec = specmod.load(sys.argv[1])
out = {}

def timed(what, once):
    before = measure.cpu_times()
    value = once()
    out[what] = [value, measure.stolen_share(before, measure.cpu_times())]

def least_rtt(net, a, b):
    pings = net.node(a).run_in(["ping", "-n", "-c", "20", "-i", "0.05", net.ip(b)])
    return float(re.search(r"= ([\\d.]+)/", pings).group(1)) / 1e3   # the summary's microseconds

with Cluster(sys.argv[2]) as cluster:
    machine_of = span.layout(spec, cluster, sys.argv[3:])
    with span.build(spec, cluster, machine_of, "relay") as net:
        for link in spec.wan:
            timed(f"rtt {link.a} {link.b}", lambda: least_rtt(net, f"{link.a}-r", f"{link.b}-r"))
            for src, dst in ((link.a, link.b), (link.b, link.a)):
                timed(f"goodput {src} {dst}",
                      lambda: measure.iperf3(net, f"{src}-w0", f"{dst}-w0", seconds=4)[0])
        # A live change of a crossing link's delay, made up for as at the build.
        net.change_link("virginia", "tokyo", delay=0.03)
        timed("rtt after the change", lambda: least_rtt(net, "virginia-r", "tokyo-r"))
print(json.dumps(out))
"""


def test_every_link_local_or_crossing_delivers_its_configuration(machines, request):
    spec = topology("quickstart")
    pins = [p for p in places(machines) if p != "--place"]
    r = machines.run_in(machines.driver, [cli_argv()[0], "-c", MEASURE, spec.source, machines.head,
                                          *pins], check=False, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    measured = json.loads(r.stdout.strip().splitlines()[-1])
    rtts, goodputs = [], []
    for link in spec.wan:
        rtt, stolen = measured[f"rtt {link.a} {link.b}"]
        off = rtt - (link.ab.delay + link.ba.delay)
        rtts.append(Run(abs(off) <= RTT_SLACK, stolen, (link.name, off)))
        for src, dst, d in ((link.a, link.b, link.ab), (link.b, link.a, link.ba)):
            goodput, stolen = measured[f"goodput {src} {dst}"]
            ratio = goodput / (d.rate * GOODPUT_SHARE)
            goodputs.append(Run(abs(ratio - 1) <= GOODPUT_SLACK, stolen, (src, dst, ratio)))
    rtt, stolen = measured["rtt after the change"]
    rtts.append(Run(abs(rtt - 0.06) <= RTT_SLACK, stolen, ("virginia-tokyo at 30 ms", rtt - 0.06)))
    judge(request, "every link's least RTT, local or between machines, within 0.2 ms of its delays",
          rtts)
    judge(request, "every direction's goodput, local or between machines, within 1% of its rate",
          goodputs)


def test_selftest_over_the_cluster_passes(machines):
    r = machines.run_in(machines.driver, cli_argv("selftest", topology("quickstart").source,
                                                  "--seconds", "2", "--cluster", machines.head,
                                                  *places(machines)), check=False, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = (machines.address[n] for n in machines.names)
    assert f"{a}: virginia, frankfurt; {b}: tokyo" in r.stdout
    rows = [cells[0] for cells in ([c.strip() for c in line.split("│")[1:-1]]
                                   for line in r.stdout.splitlines()) if cells]
    assert sorted(rows) == sorted(
        [f"RTT {a} <-> {b}" for a, b in PAIRS] +
        [f"goodput {s} -> {d}" for a, b in PAIRS for s, d in ((a, b), (b, a))]), r.stdout


def digests(run_dir):
    found = {}
    for path in glob.glob(os.path.join(run_dir, "agents", "*-w*.jsonl")):
        with open(path) as f:
            for line in f:
                e = json.loads(line)
                if e["ev"] == "done":
                    found[os.path.basename(path)] = e["model"]
    return found


def test_a_training_run_across_two_machines_ends_with_the_models_of_one_machine(machines, tmp_path):
    with open(os.path.join(ROOT, "topologies", "quickstart.yaml")) as f:
        text = f.read()
    topo = tmp_path / "split.yaml"
    topo.write_text(text.replace(QUICKSTART_STOP, FIXED_STOP) + DYNAMICS)
    runs = tmp_path / "runs"
    r = machines.run_in(machines.driver, cli_argv("run", str(topo), "--runs", str(runs / "span"),
                                                  "--set", OVERRIDE, "--cluster", machines.head,
                                                  *places(machines)),
                        check=False, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (span_dir,) = glob.glob(str(runs / "span" / "*"))
    one = runner.run(specmod.load(str(topo), [assignment(OVERRIDE)]), str(runs / "one"),
                     show=lambda line: None, say=lambda text: None)
    assert one.status == "completed", one.reason
    ours, theirs = digests(span_dir), digests(one.folder.path)
    assert len(ours) == 6 and ours == theirs
    with open(os.path.join(span_dir, "clocks.json")) as f:
        clocks = json.load(f)
    a, b = (machines.address[n] for n in machines.names)
    assert clocks["machines"][b]["machine_of"] == ["tokyo"]
    # The underlay's round trip between the two, which the crossing links' delays make up for.
    assert 0 < clocks["underlay_rtt"][f"{a}-{b}"] < 0.005
    # The change reached the shaper on tokyo's machine (tokyo -> virginia) and on virginia's.
    with open(os.path.join(span_dir, "link_samples.jsonl")) as f:
        samples = [json.loads(line) for line in f]
    for src, dst in (("tokyo", "virginia"), ("virginia", "tokyo")):
        rates = [s["rate"] for s in samples if (s["src"], s["dst"]) == (src, dst)]
        assert rates[0] == 20e6 and rates[-1] == 10e6, (src, dst, rates)
    # Both machines' CPU, each line naming its machine; the report names the busiest.
    with open(os.path.join(span_dir, "cpu_samples.jsonl")) as f:
        assert {json.loads(line)["machine"] for line in f} == {a, b}
    with open(os.path.join(span_dir, "summary.json")) as f:
        assert json.load(f)["cpu"]["machine"] in (a, b)
    # Each machine's part is gone: its own `testbed clean` finds nothing.
    for name in machines.names:
        assert os.listdir(machines.state_dirs[name]) == [], name


def test_a_machine_that_dies_fails_the_run_with_its_name_and_leaves_nothing_on_the_other(
        machines, tmp_path):
    with open(os.path.join(ROOT, "topologies", "quickstart.yaml")) as f:
        text = f.read()
    topo = tmp_path / "long.yaml"
    topo.write_text(text.replace(QUICKSTART_STOP, "stop: {iterations: 100000, time: 2min}"))
    a, b = machines.names
    run = subprocess.Popen(["ip", "netns", "exec", machines.driver,
                            *cli_argv("run", str(topo), "--runs", str(tmp_path / "runs"),
                                      "--cluster", machines.head, *places(machines))],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Once the run's agents train, the node server of tokyo's machine is killed.
        deadline = time.monotonic() + 120
        while not glob.glob(str(tmp_path / "runs" / "*" / "agents" / "tokyo-w0.jsonl")):
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.5)
        (server,) = [p for p in pids_in(b) if NODE_MODULE in cmdline(p)]
        os.kill(server, signal.SIGKILL)
        out, _ = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, out
    assert f"machine {machines.address[b]}" in out and "Traceback" not in out
    # The surviving machine took its part down; the dead one's is left to
    # its own `testbed clean`, which removes it.
    assert os.listdir(machines.state_dirs[a]) == []
    assert len(os.listdir(machines.state_dirs[b])) == 1
    machines.clean(b)
    assert os.listdir(machines.state_dirs[b]) == []
