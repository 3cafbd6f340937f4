"""Units as researchers write them in topo.yaml, turned into plain numbers.

Inside the code a rate is bits per second, a time is seconds, a size is
bytes and a share is a fraction, all floats or ints.  Strings with units
exist only in YAML and in printed output; this module is the one place
that converts between the two.
"""

import math
import re

_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"

# Only bit rates: "mbps" means megabytes to tc and megabits to most people,
# so it is refused rather than guessed.
RATE_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
SIZE_UNITS = {"b": 1, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3,
              "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3}


class UnitError(ValueError):
    """A value that is not a quantity of the expected kind."""


def _split(text, units, kind, example):
    if isinstance(text, bool) or not isinstance(text, str):
        raise UnitError(f"{shown(text)} is not a {kind} like {example}")
    m = re.fullmatch(_NUMBER + r"([a-z]+)", text.strip().lower())
    if not m or m.group(2) not in units:
        raise UnitError(f"{shown(text)} is not a {kind} like {example}")
    value = float(m.group(1)) * units[m.group(2)]
    if not math.isfinite(value):
        raise UnitError(f"{shown(text)} is too large a {kind}")
    return value


def shown(value, limit=40):
    """A value quoted in an error, cut short: a sentence, not a dump."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def parse_rate(text):
    """'50mbit' -> 50e6 bit/s."""
    return _split(text, RATE_UNITS, "rate", "50mbit")


def parse_time(text):
    """'40ms' -> 0.04 s.  A bare 0 is accepted as 'none'."""
    if text == 0 and not isinstance(text, bool):
        return 0.0
    return _split(text, TIME_UNITS, "time", "40ms")


def parse_size(text):
    """'64kb' -> 64000 bytes; a bare integer is a number of bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    return int(_split(text, SIZE_UNITS, "size", "64kb"))


def parse_fraction(text):
    """'0.5%' -> 0.005; a bare number is already a fraction (0.005)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    elif isinstance(text, str) and re.fullmatch(_NUMBER + r"%", text.strip()):
        value = float(text.strip()[:-1]) / 100.0
    else:
        raise UnitError(f"{shown(text)} is not a share like 0.5%")
    if not math.isfinite(value):
        raise UnitError(f"{shown(text)} is not a share like 0.5%")
    return value


def plural(n, word):
    """'1 server', '2 servers': a count as printed."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def format_rate(bps):
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}bit"


def format_time(seconds):
    if seconds >= 1:
        return f"{seconds:g}s"
    if seconds >= 1e-3 or seconds == 0:
        return f"{seconds * 1e3:g}ms"
    return f"{seconds * 1e6:g}us"
