"""experiment.programs: which hosts, in which rank order, with which
fields and environment; and the refusals of what cannot run."""

import textwrap

import pytest

from testbed import spec as S
from testbed.records.runfolder import RunFolder
from testbed.run import programs

BASE = textwrap.dedent("""\
    datacenters: [{name: a, workers: 2, servers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 10mbit, delay: 5ms}]
    experiment:
      workload: command
      programs:
    PROGRAMS
    """)


def load(programs, extra=""):
    return S.loads(BASE.replace("PROGRAMS", textwrap.indent(programs, "    ")) + extra).experiment


def test_hosts_take_ranks_in_the_order_of_programs_then_of_topo_yaml():
    exp = load("- {hosts: servers, command: serve}\n- {hosts: workers, command: 'work {rank}'}\n")
    assert [p.hosts for p in exp.programs] == [("a-s0",), ("a-w0", "a-w1", "b-w0")]
    assert load("- {hosts: b, command: x}\n").programs[0].hosts == ("b-w0",)
    assert load("- {hosts: all, command: x}\n").programs[0].hosts == ("a-s0", "a-w0", "a-w1", "b-w0")
    assert load("- {hosts: [b-w0, a-s0], command: x}\n").programs[0].hosts == ("b-w0", "a-s0")


def test_each_process_gets_its_rank_the_master_and_the_testbed_s_variables(tmp_path):
    exp = load("- {hosts: [b-w0], command: 'run --rank {rank} --of {world_size} {master_addr}'}\n"
               "- {hosts: [a-w0], command: x, env: {OMP_NUM_THREADS: 1}}\n", "  master_port: 29555\n")
    hosts = {"b-w0": ("b", "10.2.0.10", "b-w0-eth0"), "a-w0": ("a", "10.1.0.11", "a-w0-eth0")}
    first, second = programs.plan(exp, hosts, RunFolder(str(tmp_path)), "/home/u")
    assert first.command == "run --rank 0 --of 2 10.2.0.10"
    assert (first.env["RANK"], second.env["RANK"], second.env["WORLD_SIZE"]) == ("0", "1", "2")
    assert second.env["MASTER_ADDR"] == "10.2.0.10" and second.env["MASTER_PORT"] == "29555"
    assert second.env["GLOO_SOCKET_IFNAME"] == "a-w0-eth0" and second.env["TESTBED_DC"] == "a"
    assert second.env["TESTBED_PEERS"] == "b-w0=10.2.0.10,a-w0=10.1.0.11"
    assert second.env["OMP_NUM_THREADS"] == "1" and second.env["HOME"] == "/home/u"
    assert second.env["TESTBED_METRICS"] == str(tmp_path / "programs" / "a-w0.metrics.jsonl")


@pytest.mark.parametrize("programs_,extra,path,words", [
    ("- {hosts: workers}\n", "", "experiment.programs[0].command", "missing"),
    ("- {hosts: mars, command: x}\n", "", "experiment.programs[0].hosts", "is not workers, servers"),
    ("- {hosts: [a-w9], command: x}\n", "", "experiment.programs[0].hosts[0]", "unknown host 'a-w9'"),
    ("- {command: 'x {port}'}\n", "", "experiment.programs[0].command", "unknown field {port}"),
    ("- {command: x}\n- {hosts: [a-w0], command: y}\n", "", "experiment.programs[1].hosts",
     "a-w0 already runs program 0"),
    ("- {command: x, env: {RANK: 3}}\n", "", "experiment.programs[0].env.RANK", "set by the testbed"),
    ("- {command: x}\n", "  sync: ssgd\n", "experiment.sync", "takes no sync"),
    ("- {command: x}\n", "  user: no-such-user-here\n", "experiment.user", "no user"),
    ("- {command: x}\n", "  stop: {accuracy: 0.9}\n", "experiment.stop.accuracy", "no accuracy"),
])
def test_what_cannot_run_is_refused_naming_its_path(programs_, extra, path, words):
    with pytest.raises(S.SpecError) as e:
        load(programs_, extra)
    assert e.value.path == path and words in e.value.message


def test_programs_belong_to_the_command_workload_only():
    text = BASE.replace("workload: command", "workload: train").replace(
        "PROGRAMS", "    - {command: x}")
    with pytest.raises(S.SpecError, match="experiment.programs: is for workload: command only"):
        S.loads(text)


def test_the_programs_run_in_workdir_from_topo_yaml_s_folder(tmp_path):
    (tmp_path / "code").mkdir()
    topo = tmp_path / "topos" / "t.yaml"
    topo.parent.mkdir()
    topo.write_text(BASE.replace("PROGRAMS", "    - {command: x}") + "  workdir: ../code\n")
    assert programs.workdir(S.load(str(topo))) == str(tmp_path / "code")
    topo.write_text(BASE.replace("PROGRAMS", "    - {command: x}"))
    assert programs.workdir(S.load(str(topo))) == str(tmp_path / "topos")
    topo.write_text(BASE.replace("PROGRAMS", "    - {command: x}") + "  workdir: ../nowhere\n")
    with pytest.raises(programs.ProgramError, match=f"no folder {tmp_path}/nowhere to run"):
        programs.workdir(S.load(str(topo)))
    with pytest.raises(S.SpecError, match="experiment.workdir: 3 is not a folder"):
        load("- {command: x}\n", "  workdir: 3\n")
