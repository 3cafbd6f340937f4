"""The validation kit every section of topo.yaml and a recipe go through:
each check returns what it accepts as the code uses it, and refuses the
rest with one sentence naming the YAML path."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from testbed.spec import validate as check
from testbed.spec.units import parse_fraction
from testbed.spec.validate import SpecError


def refused(fn, *args, **kwargs):
    with pytest.raises(SpecError) as e:
        fn(*args, **kwargs)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_paths_name_list_items_and_keys():
    assert check.path_of("wan", 2) == "wan[2]"
    assert check.path_of("experiment", "stop") == "experiment.stop"
    assert check.path_of("", "name") == "name"


def test_unknown_keys_get_the_key_meant_or_the_known_ones():
    check.keys({"bw": 1}, {"bw", "delay"}, "wan[0]")
    assert refused(check.keys, {"rate": 1}, {"bw", "delay"}, "wan[0]") == \
        "wan[0].rate: unknown key; did you mean 'bw'?"
    assert refused(check.keys, {"dealy": 1}, {"bw", "delay"}, "wan[0]") == \
        "wan[0].dealy: unknown key; did you mean 'delay'?"
    assert refused(check.keys, {"colour": 1}, {"bw", "delay"}, "lan") == \
        "lan.colour: unknown key; known keys: bw, delay"
    assert refused(check.keys, {3: 1}, {"bw"}, "lan") == "lan: key 3 is not a string"


def test_mappings_and_lists_say_what_they_hold_and_what_came():
    assert check.mapping({"a": 1}, "x", "a") == {"a": 1}
    assert check.sequence([1], "x", "items") == [1]
    assert refused(check.mapping, [1], "tcp", "slow_start_after_idle") == \
        "tcp: must be a mapping (slow_start_after_idle), not list"
    assert refused(check.sequence, {}, "wan", "one entry per link") == \
        "wan: must be a list (one entry per link), not dict"


def test_whole_numbers_refuse_booleans_fractions_and_out_of_range():
    assert check.whole(3, "n", 0, 32) == 3
    assert check.whole(-7, "seed") == -7
    assert refused(check.whole, -1, "datacenters[0].workers", 0, 32) == \
        "datacenters[0].workers: -1 must be a whole number in 0..32"
    assert refused(check.whole, True, "n", 0, 32) == "n: True must be a whole number in 0..32"
    assert refused(check.whole, 2.5, "seed") == "seed: 2.5 must be a whole number"


@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3)))
def test_a_whole_number_is_accepted_exactly_when_it_is_an_int_in_range(value):
    inside = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10
    try:
        assert check.whole(value, "n", 1, 10) == value
        assert inside
    except SpecError:
        assert not inside


def test_numbers_in_closed_and_half_open_ranges():
    assert check.number(1, "lr", 0.0, 100.0) == 1.0
    assert isinstance(check.number(1, "lr", 0.0, 100.0), float)
    assert check.number(1, "scale", 0, 1, above=True) == 1.0
    assert refused(check.number, 0, "scale", 0, 1, above=True) == "scale: 0 must be a number in (0, 1]"
    assert refused(check.number, "fast", "lr", 0.0, 100.0) == "lr: 'fast' must be a number in 0.0..100.0"
    assert refused(check.number, float("nan"), "lr", 0.0, 100.0) == "lr: nan must be a number in 0.0..100.0"


def test_words_suggest_the_one_meant_or_list_them_all():
    assert check.word("beamer", "search.policy", ["fair", "beamer"], "policy") == "beamer"
    assert refused(check.word, "beamr", "search.policy", ["fair", "beamer"], "policy") == \
        "search.policy: unknown policy 'beamr'; did you mean 'beamer'?"
    assert refused(check.word, "lifo", "search.policy", ["fair", "beamer"], "policy") == \
        "search.policy: unknown policy 'lifo'; available: fair, beamer"
    assert refused(check.word, ["a"], "x.dc", ["a", "b"], "data center") == \
        "x.dc: unknown data center ['a']; available: a, b"


def test_quantities_with_units_come_back_in_base_units():
    assert check.duration("40ms", "delay") == pytest.approx(0.04)
    assert check.duration(0, "delay") == 0.0
    assert check.rate("50mbit", "bw") == 50e6
    assert check.size("64kib", "chunk", "1kib", "1gib") == 65536
    assert check.loss("0.5%", "loss") == pytest.approx(0.005)
    assert check.unit(parse_fraction, "5%", "budget") == pytest.approx(0.05)


def test_quantities_out_of_their_range_name_the_bound():
    assert refused(check.duration, 20, "wan[0].delay") == "wan[0].delay: 20 is not a time like 40ms"
    assert refused(check.duration, "0s", "stop.time", positive=True) == "stop.time: '0s' must be above zero"
    assert refused(check.duration, "2min", "wan[0].delay", upper=60.0) == \
        "wan[0].delay: '2min': must be between 0 and 60s"
    assert refused(check.rate, "0mbit", "lan.bw") == "lan.bw: '0mbit' must be above zero"
    assert refused(check.rate, "5 mbps", "lan.bw") == "lan.bw: '5 mbps' is not a rate like 50mbit"
    assert refused(check.size, "10b", "chunk", "1kib", "1gib") == "chunk: '10b' must be between 1kib and 1gib"
    assert refused(check.loss, "100%", "loss") == "loss: '100%': loss must be at least 0% and below 100%"


def test_a_wrong_type_below_a_path_is_one_error_naming_that_path():
    with pytest.raises(SpecError) as e:
        with SpecError.at("wan[3]", "a mapping of bw, delay"):
            None + 1
    assert str(e.value) == "wan[3]: a value of the wrong type: expected a mapping of bw, delay"
    with pytest.raises(SpecError, match="^inner: kept$"):
        with SpecError.at("outer", "anything"):
            raise SpecError("inner", "kept")
