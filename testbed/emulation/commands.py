"""The grammar of commands that change the emulated WAN by hand, shared by
a running experiment's commands (testbed/run/control.py) and `testbed
net`'s console: a line is split into words and parsed whole, so a bad
command is one sentence and changes nothing."""

import logging
import shlex

from testbed.spec import dynamics
from testbed.spec import validate as check
from testbed.spec.units import format_rate, format_time

log = logging.getLogger(__name__)

LINK_USAGE = "link A B [bw RATE] [delay TIME] [jitter TIME] [loss SHARE] [oneway], or link A B down|up"


class CommandError(ValueError):
    """A command that cannot be carried out; the text says why."""


def split_words(line):
    """Shell-like words of a command line; an unbalanced quote is a CommandError."""
    try:
        return shlex.split(line)
    except ValueError as e:
        raise CommandError(f"cannot read the command: {e}") from None


def words_of(line):
    """Split a command; `bw=5mbit` is the same as `bw 5mbit`."""
    out = []
    for w in split_words(line):
        out += w.split("=", 1) if "=" in w else [w]
    return out


def failure_line(e):
    """One line saying why a command failed in a way no check foresaw; the
    traceback goes to the debug log, the console goes on."""
    log.debug("a command failed", exc_info=e)
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"the command failed: {type(e).__name__}" + (f": {first}" if first else "")


def parse_link_change(words, dc_names):
    """['a', 'b', 'bw', '5mbit', 'delay', '80ms'] ->
    ('a', 'b', both, {'rate': 5e6, 'delay': 0.08})."""
    if len(words) < 3:
        raise CommandError(f"usage: {LINK_USAGE}")
    a, b, rest = words[0], words[1], words[2:]
    for dc in (a, b):
        if dc not in dc_names:
            raise CommandError(f"unknown data center {dc!r} (known: {', '.join(dc_names)})")
    both = True
    if rest and rest[-1] == "oneway":
        both, rest = False, rest[:-1]
    if rest in (["down"], ["up"]):
        return a, b, both, {"up": rest[0] == "up"}
    # The checks topo.yaml's links go through, with their bounds.
    checks = {"bw": ("rate", check.rate),
              "delay": ("delay", lambda v, p: check.duration(v, p, upper=check.MAX_DELAY)),
              "jitter": ("jitter", lambda v, p: check.duration(v, p, upper=check.MAX_DELAY)),
              "loss": ("loss", check.loss)}
    if not rest or len(rest) % 2:
        raise CommandError(f"usage: {LINK_USAGE}")
    changes = {}
    for key, value in zip(rest[::2], rest[1::2]):
        if key not in checks:
            raise CommandError(f"unknown link setting {key!r}; use bw, delay, jitter, loss, down or up")
        name, checked = checks[key]
        try:
            changes[name] = checked(value, key)
        except check.SpecError as e:
            raise CommandError(str(e)) from None
    return a, b, both, changes


def parse_speed(words, workers_by_dc, max_speed=dynamics.MAX_SPEED):
    """['tokyo-w0', '0.3'] -> (('tokyo-w0',), 0.3); a DC name means all its workers.
    max_speed is 1 when the workers train for real (they can only be slowed down)."""
    if len(words) != 2:
        raise CommandError("usage: speed WORKER|DC FACTOR")
    target, value = words
    if target in workers_by_dc:
        workers = tuple(workers_by_dc[target])
    elif any(target in ws for ws in workers_by_dc.values()):
        workers = (target,)
    else:
        names = [w for ws in workers_by_dc.values() for w in ws]
        raise CommandError(f"unknown worker or data center {target!r} (workers: {', '.join(names)})")
    try:
        speed = float(value)
    except ValueError:
        raise CommandError(f"{value!r} is not a speed factor like 0.5") from None
    if not 0 < speed <= dynamics.MAX_SPEED:
        raise CommandError(f"a speed factor is above 0 and at most {dynamics.MAX_SPEED:g} "
                           "(1.0 = reference)")
    if speed > max_speed:
        raise CommandError(f"speed {speed:g}: {dynamics.TRAIN_SPEED_LIMIT}")
    return workers, speed


def links_text(current):
    """The WAN directions as configured now, one line each."""
    lines = [f"{'direction':28}{'rate':>10}{'delay':>9}{'jitter':>9}{'loss':>7}{'queue':>10}  state"]
    for (src, dst), d in current.items():
        lines.append(f"{src + ' -> ' + dst:28}{format_rate(d.rate):>10}{format_time(d.delay):>9}"
                     f"{format_time(d.jitter):>9}{d.loss * 100:>6g}%{d.queue:>9}B  "
                     f"{'up' if d.up else 'down'}")
    return "\n".join(lines)
