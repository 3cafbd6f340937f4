import pytest

from testbed.spec.units import (UnitError, format_rate, format_time, parse_fraction, parse_rate,
                           parse_size, parse_time)


@pytest.mark.parametrize("text,bps", [("50mbit", 50e6), ("2gbit", 2e9), ("1.5Mbit", 1.5e6),
                                      ("800kbit", 800e3), ("64bit", 64)])
def test_rates_are_bits_per_second(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text", ["50 mbps", "50mbps", "50", "fast", "", "-5mbit", "5 mbit", True])
def test_rates_that_are_not_bit_rates_are_refused(text):
    with pytest.raises(UnitError, match="is not a rate like 50mbit"):
        parse_rate(text)


@pytest.mark.parametrize("text,seconds", [("40ms", 0.04), ("1.5s", 1.5), ("250us", 250e-6),
                                          ("2min", 120.0), (0, 0.0)])
def test_times_are_seconds(text, seconds):
    assert parse_time(text) == pytest.approx(seconds)


def test_a_bare_number_is_not_a_time():
    with pytest.raises(UnitError, match="is not a time like 40ms"):
        parse_time(40)


@pytest.mark.parametrize("text,share", [("0.5%", 0.005), ("1%", 0.01), (0.02, 0.02), (0, 0.0)])
def test_shares_are_fractions(text, share):
    assert parse_fraction(text) == pytest.approx(share)


def test_sizes_are_bytes():
    assert parse_size("64kb") == 64000
    assert parse_size("1mib") == 1 << 20
    assert parse_size(1500) == 1500


def test_formatting_round_trips_through_parsing():
    for bps in (50e6, 2e9, 800e3):
        assert parse_rate(format_rate(bps)) == bps
    for s in (0.04, 1.5, 250e-6):
        assert parse_time(format_time(s)) == pytest.approx(s)
