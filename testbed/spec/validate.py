"""The checks every part of topo.yaml (and a sweep's recipe) goes through,
written once: a mapping with known keys, a list, a whole number or a
number in a range, a word from a list, a quantity with units (a time, a
rate, a size, a loss), and the guard that turns a value of the wrong type
met anywhere under a YAML path into one sentence naming that path.

Each check returns the value it accepts, as the code uses it (units
resolved), or raises a SpecError whose text names the path:
``wan[2].bw: '50 mbps' is not a rate like 50mbit``.
"""

import contextlib
import difflib
import logging

from testbed.spec.units import UnitError, format_rate, parse_fraction, parse_rate, parse_size, parse_time, shown

log = logging.getLogger(__name__)

# The bounds of a link's settings wherever they are given: topo.yaml, its
# dynamics and traces, and live changes.  tc takes an HTB rate to 2^64
# bytes/s, but a queue of a round-trip BDP must stay within what a leaf
# queue counts (32 bits of bytes); no emulation here reaches 100 Gbit/s.
MAX_RATE = 100e9                 # bit/s
MAX_DELAY = 60.0                 # one-way delay or jitter of a WAN link, seconds
MAX_QUEUE_BYTES = 1 << 30

# Spellings people reach for, mapped to the key topo.yaml uses.
SYNONYMS = {"rate": "bw", "bandwidth": "bw", "latency": "delay", "links": "wan",
            "dcs": "datacenters", "nodes": "datacenters", "hosts": "workers",
            "drop": "loss", "buffer": "queue"}


class SpecError(ValueError):
    """A problem in topo.yaml, located by its YAML path."""

    def __init__(self, path, message):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)

    @classmethod
    @contextlib.contextmanager
    def at(cls, path, expected):
        """Validate one YAML subtree: whatever a check did not foresee (a list
        where a name belongs, a mapping where a number belongs) surfaces as a
        TypeError or the like; it becomes one error naming this path, so no
        wrong type anywhere in the file ends in a traceback."""
        try:
            yield
        except SpecError:
            raise
        except (TypeError, AttributeError, KeyError, IndexError, ValueError, ArithmeticError) as e:
            log.debug("unforeseen value at %s", path or "the top level", exc_info=e)
            raise cls(path, f"a value of the wrong type: expected {expected}") from None


def path_of(parent, key):
    """The YAML path of `key` under `parent`: wan[2], experiment.stop."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def keys(mapping, allowed, path):
    """Refuse a key that is not one of `allowed`, with the key meant when a
    synonym or a close spelling names one."""
    for key in mapping:
        if not isinstance(key, str):
            raise SpecError(path, f"key {key!r} is not a string")
        if key not in allowed:
            hint = SYNONYMS.get(key) if SYNONYMS.get(key) in allowed else None
            if hint is None:
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                hint = close[0] if close else None
            suggestion = f"; did you mean '{hint}'?" if hint else \
                f"; known keys: {', '.join(sorted(allowed))}"
            raise SpecError(path_of(path, key), f"unknown key{suggestion}")


def mapping(value, path, what):
    """A mapping; `what` says what it holds (its keys, say)."""
    if not isinstance(value, dict):
        raise SpecError(path, f"must be a mapping ({what}), not {type(value).__name__}")
    return value


def sequence(value, path, what):
    """A list; `what` says what it holds."""
    if not isinstance(value, list):
        raise SpecError(path, f"must be a list ({what}), not {type(value).__name__}")
    return value


def whole(value, path, low=None, high=None):
    """A whole number (not a boolean), in low..high when they are given."""
    if isinstance(value, bool) or not isinstance(value, int) \
            or (low is not None and not low <= value <= high):
        span = f" in {low}..{high}" if low is not None else ""
        raise SpecError(path, f"{shown(value)} must be a whole number{span}")
    return value


def number(value, path, low, high, above=False):
    """A number in low..high as a float, or in (low, high] when `above`."""
    inside = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        (low < value if above else low <= value) and value <= high
    if not inside:
        span = f"({low}, {high}]" if above else f"{low}..{high}"
        raise SpecError(path, f"{shown(value)} must be a number in {span}")
    return float(value)


def word(value, path, words, what):
    """One of `words`; otherwise the one meant, where the spelling is close,
    or all of them."""
    if isinstance(value, str) and value in words:
        return value
    close = difflib.get_close_matches(value, list(words), n=1) if isinstance(value, str) else []
    hint = f"did you mean {close[0]!r}?" if close else f"available: {', '.join(words)}"
    raise SpecError(path, f"unknown {what} {shown(value)}; {hint}")


def unit(parse, value, path):
    """`value` parsed by one of testbed.spec.units' parsers."""
    try:
        return parse(value)
    except UnitError as e:
        raise SpecError(path, str(e)) from None


def duration(value, path, positive=False, upper=None):
    """A time like 40ms in seconds (a bare 0 is none): above zero when
    `positive`, at most `upper` seconds when given."""
    t = unit(parse_time, value, path)
    if positive and t <= 0:
        raise SpecError(path, f"{shown(value)} must be above zero")
    if upper is not None and t > upper:
        raise SpecError(path, f"{shown(value)}: must be between 0 and {upper:g}s")
    return t


def rate(value, path):
    """A rate like 50mbit in bit/s, above zero and at most MAX_RATE."""
    bps = unit(parse_rate, value, path)
    if not bps > 0:
        raise SpecError(path, f"{shown(value)} must be above zero")
    if bps > MAX_RATE:
        raise SpecError(path, f"{shown(value)} is above the {format_rate(MAX_RATE)} a link may have")
    return bps


def size(value, path, low, high):
    """A size like 64kib (or a number of bytes) in bytes, between the sizes
    `low` and `high`, given as they are written (1kib)."""
    n = unit(parse_size, value, path)
    if not parse_size(low) <= n <= parse_size(high):
        raise SpecError(path, f"{shown(value)} must be between {low} and {high}")
    return n


def loss(value, path):
    """A share of frames lost like 0.5% as a fraction, below one."""
    share = unit(parse_fraction, value, path)
    if not 0 <= share < 1:
        raise SpecError(path, f"{shown(value)}: loss must be at least 0% and below 100%")
    return share
