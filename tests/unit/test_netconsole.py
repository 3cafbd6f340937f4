import pytest

from testbed.netconsole import CommandError, parse_link_change

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
