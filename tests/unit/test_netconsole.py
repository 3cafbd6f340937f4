import pytest

from testbed.control import CommandError, parse_link_change, parse_speed, words_of

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

    from testbed.control import reachable
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
