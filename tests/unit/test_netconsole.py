import json
import os

import pytest

from testbed.emulation.commands import CommandError, parse_link_change, parse_speed, words_of

DCS = ["virginia", "frankfurt", "tokyo"]


def test_link_change_parses_units_into_numbers():
    assert parse_link_change(["virginia", "tokyo", "bw", "5mbit", "delay", "80ms", "loss", "1%"],
                             DCS) == ("virginia", "tokyo", True,
                                      {"rate": 5e6, "delay": 0.08, "loss": 0.01})


def test_oneway_changes_only_a_to_b():
    assert parse_link_change(["tokyo", "virginia", "bw", "1gbit", "oneway"], DCS)[2] is False


@pytest.mark.parametrize("words,msg", [
    (["virginia"], "usage"),
    (["virginia", "mars", "bw", "5mbit"], "unknown data center 'mars'"),
    (["virginia", "tokyo"], "usage"),
    (["virginia", "tokyo", "bw"], "usage"),
    (["virginia", "tokyo", "speed", "5"], "unknown link setting 'speed'"),
    (["virginia", "tokyo", "bw", "5 mbps"], "not a rate"),
    (["virginia", "tokyo", "bw", "0mbit"], "above zero"),
    (["virginia", "tokyo", "loss", "100%"], "below 100%"),
])
def test_bad_link_commands_say_why_in_one_sentence(words, msg):
    with pytest.raises(CommandError, match=msg):
        parse_link_change(words, DCS)


def test_down_and_up_cut_and_restore_a_link():
    assert parse_link_change(["virginia", "tokyo", "down"], DCS) == ("virginia", "tokyo", True, {"up": False})
    assert parse_link_change(["virginia", "tokyo", "up", "oneway"], DCS)[2:] == (False, {"up": True})


def test_inject_style_key_value_words_read_like_console_words():
    assert words_of("link virginia tokyo bw=5mbit delay=80ms") == [
        "link", "virginia", "tokyo", "bw", "5mbit", "delay", "80ms"]


WORKERS = {"virginia": ["virginia-w0", "virginia-w1"], "tokyo": ["tokyo-w0"]}


def test_speed_of_one_worker_or_a_whole_dc():
    assert parse_speed(["tokyo-w0", "0.3"], WORKERS) == (("tokyo-w0",), 0.3)
    assert parse_speed(["virginia", "2"], WORKERS) == (("virginia-w0", "virginia-w1"), 2.0)


@pytest.mark.parametrize("words,msg", [(["mars-w0", "0.3"], "unknown worker"),
                                       (["tokyo-w0", "fast"], "not a speed factor"),
                                       (["tokyo-w0", "0"], "above 0"), (["tokyo-w0"], "usage")])
def test_bad_speed_commands_say_why(words, msg):
    with pytest.raises(CommandError, match=msg):
        parse_speed(words, WORKERS)


def test_a_control_socket_deep_in_the_file_system_is_still_reachable(tmp_path):
    import socket

    from testbed.run.control import reachable
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = str(deep / "control.sock")
    assert len(path) > 108
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with reachable(path) as name:
        server.bind(name)
    server.listen(1)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with reachable(path) as name:
        client.connect(name)
    conn, _ = server.accept()
    client.sendall(b"x")
    assert conn.recv(1) == b"x"
    for s in (conn, client, server):
        s.close()


# ---------------------------------------------------------------- consoles stay up

import io  # noqa: E402
import textwrap  # noqa: E402
import types  # noqa: E402

from testbed import spec as S  # noqa: E402

SYNTHETIC = """
datacenters: [{name: virginia, workers: 2, servers: 1}, {name: tokyo, workers: 1}]
wan: [{between: [virginia, tokyo], bw: 20mbit, delay: 10ms}]
experiment: {workload: %s}
"""


def a_spec(workload="synthetic"):
    return S.loads(textwrap.dedent(SYNTHETIC % workload))


def test_speeds_above_one_are_refused_for_real_training_with_the_reason():
    with pytest.raises(CommandError, match="real training cannot run faster than this machine"):
        parse_speed(["tokyo-w0", "2"], WORKERS, max_speed=1.0)
    assert parse_speed(["tokyo-w0", "1"], WORKERS, max_speed=1.0) == (("tokyo-w0",), 1.0)


class ExplodingNetConsole:
    """NetConsole with one command that fails in a way no check foresaw."""

    @staticmethod
    def make(out):
        from testbed.emulation.netconsole import NetConsole

        class Console(NetConsole):
            def do_boom(self, arg):
                raise RuntimeError("boom\nsecond line")
        # These commands fail before they reach a network: the spec is all it needs.
        return Console(types.SimpleNamespace(spec=a_spec()), out)


@pytest.mark.parametrize("line,words", [
    ("iperf a b x", "error: SECONDS is a number from 2 to 600"),
    ("iperf a b 1e9", "error: SECONDS is a number"),
    ("iperf a", "error: usage: iperf A B [SECONDS]"),
    ("link virginia 'tokyo", "error: cannot read the command: No closing quotation"),
    ("sh \"x", "error: cannot read the command"),
    ("ping a", "error: usage: ping A B"),
    ("boom", "error: the command failed: RuntimeError: boom"),
    ("frobnicate", "error: unknown command 'frobnicate'"),
])
def test_a_bad_net_console_command_is_one_error_line_and_the_console_goes_on(line, words):
    out = io.StringIO()
    console = ExplodingNetConsole.make(out)
    assert not console.onecmd(line)          # false: the loop goes on, the network stays up
    assert out.getvalue().startswith(words) and out.getvalue().count("\n") == 1, out.getvalue()


def test_the_net_console_reads_commands_after_bad_ones_until_exit():
    out = io.StringIO()
    console = ExplodingNetConsole.make(out)
    console.stdin = io.StringIO("iperf a b x\nboom\nlink virginia 'tokyo\nhelp link\nexit\n")
    console.use_rawinput, console.prompt = False, ""
    console.cmdloop(intro="")
    assert out.getvalue().count("error:") == 3 and "change a WAN link live" in out.getvalue()


def commands(set_speed=lambda workers, speed, source: None, workload="synthetic", run_dir="."):
    from testbed.run.control import Commands
    from testbed.emulation.plan import make_plan
    spec = a_spec(workload)
    # What a network is to the commands, without building one: its spec, plan and settings.
    net = types.SimpleNamespace(spec=spec, plan=make_plan(spec, "a1b2", with_relays=False),
                                current={("virginia", "tokyo"): spec.wan[0].ab})
    return Commands(net, engine=None, set_speed=set_speed, run_dir=run_dir)


def test_run_commands_refuse_a_speed_above_one_in_real_training_only():
    done = []
    cmds = commands(lambda workers, speed, source: done.append(speed), workload="train")
    with pytest.raises(CommandError, match="can only slow it down"):
        cmds.execute("speed tokyo-w0 2", "console")
    assert done == []
    commands(lambda workers, speed, source: done.append(speed)).execute("speed tokyo-w0 2", "console")
    assert done == [2.0]


def test_an_unforeseen_failure_of_a_command_is_a_command_error():
    def broken(workers, speed, source):
        raise OSError(28, "No space left on device")
    with pytest.raises(CommandError, match="the command failed: OSError: .*No space left"):
        commands(broken).execute("speed tokyo-w0 0.5", "console")


def test_the_run_console_answers_bad_commands_with_one_line_and_goes_on():
    from testbed.run.control import RunConsole
    out = io.StringIO()
    console = RunConsole(commands(), out)
    console.stdin = io.StringIO("link virginia 'tokyo\nspeed tokyo-w0 x\nshow links\nexit\n")
    console.use_rawinput, console.prompt = False, ""
    console.cmdloop(intro="")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("error: cannot read the command") and \
        lines[1] == "error: 'x' is not a speed factor like 0.5"
    assert "virginia -> tokyo" in out.getvalue()


def test_the_control_socket_answers_every_bad_command_and_keeps_serving(tmp_path):
    import socket

    from testbed.run.control import MAX_LINE_BYTES, ControlServer, inject

    def broken(workers, speed, source):
        raise RuntimeError("the speed file is gone")
    server = ControlServer(commands(broken, run_dir=str(tmp_path)), str(tmp_path)).start()
    try:
        assert inject(str(tmp_path), "link virginia 'tokyo") == \
            (False, "cannot read the command: No closing quotation")
        assert inject(str(tmp_path), "speed tokyo-w0 0.5") == \
            (False, "the command failed: RuntimeError: the speed file is gone")
        for raw in (b"\xff\xfe help\n", b"x" * (MAX_LINE_BYTES + 10) + b"\n"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(tmp_path / "control.sock"))
            s.sendall(raw)
            reply = json.loads(s.makefile("r").readline())
            s.close()
            assert reply["ok"] is False and "\n" not in reply["text"]
        ok, text = inject(str(tmp_path), "show links")
        assert ok and "virginia -> tokyo" in text
    finally:
        server.stop()


def test_a_trace_named_at_run_time_is_read_from_the_topology_s_folder_only(tmp_path):
    from testbed.run import dynamics as engine_module
    topo_dir = tmp_path / "topo"
    topo_dir.mkdir()
    (topo_dir / "step.csv").write_text("0,5mbit\n1,10mbit\n")
    (tmp_path / "outside.csv").write_text("0,5mbit\n")
    os.mkfifo(tmp_path / "fifo")                # opening it would wait for a writer
    (topo_dir / "link.csv").symlink_to(tmp_path / "outside.csv")
    engine = engine_module.Engine(link=lambda a: None, speed=lambda a: None).run([], horizon=60)
    cmds = commands(run_dir=str(tmp_path))
    cmds.engine, cmds.base_dir = engine, str(topo_dir)
    try:
        assert cmds.execute("trace virginia tokyo step.csv", "inject").startswith(
            "trace step.csv on virginia-tokyo from now (2 rows")
        for name in ("/etc/shadow", str(tmp_path / "outside.csv"), "../outside.csv", "link.csv",
                     str(tmp_path / "fifo")):
            with pytest.raises(CommandError, match=r"read from the topology's folder \(.*/topo\) only"):
                cmds.execute(f"trace virginia tokyo {name}", "inject")
    finally:
        engine.stop()
