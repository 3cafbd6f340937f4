"""A living WAN: timed link changes, bandwidth traces, seeded generators and
compute-speed changes, from topo.yaml's `dynamics:` section or the console.

Parsing and generation are pure (`parse`, `square`, `step`, `random_walk`,
`read_trace`): they turn the section into schedules of timed actions, each
unit-tested with exact values.  The run's engine (testbed/run/dynamics.py)
replays them.

    dynamics:
      - {at: 30s, link: [a, b], bw: 5mbit, delay: 80ms}        # both directions
      - {at: 40s, link: [a, b], direction: forward, loss: 1%}  # a -> b only
      - {at: 50s, link: [a, b], down: true}                    # cut, then {up: true}
      - {at: 20s, worker: b-w0, speed: 0.3}                    # or dc: b
      - {trace: traces/step.csv, link: [a, b], loop: true}
      - {generator: square, link: [a, b], low: 5mbit, high: 20mbit, period: 20s}
      - {generator: random_walk, link: [a, b], low: 5mbit, high: 50mbit,
         step: 5mbit, every: 2s, seed: 1}
      - {generator: step, dc: b, from: 1.0, to: 0.5, at: 30s}
      - {generator: uniform, link: [a, b], direction: forward, low: 20mbit,
         high: 155mbit, every: 180s, seed: 3}
"""

import math
import os
import random
from dataclasses import dataclass

from testbed.spec import validate as check
from testbed.spec.declare import Key, Section
from testbed.spec.textfile import TextFileError, read_small_text
from testbed.spec.units import UnitError, format_rate, parse_fraction, parse_rate, parse_time, shown
from testbed.spec.validate import SpecError

GENERATORS = ("step", "square", "random_walk", "uniform")
# Each generator's own keys in a dynamics entry, besides `generator`, `start` and its target.
GENERATOR_KEYS = {"step": {"at", "from", "to"}, "square": {"low", "high", "period"},
                  "random_walk": {"low", "high", "step", "every", "seed", "initial"},
                  "uniform": {"low", "high", "every", "seed"}}
SEEDED_GENERATORS = tuple(name for name in GENERATORS if "seed" in GENERATOR_KEYS[name])
LINK_SETTINGS = ("bw", "delay", "jitter", "loss")
# Relative compute speeds: 1.0 is the reference worker.  Synthetic compute
# sleeps compute_time / speed, so any speed is emulated; real training can
# only be stretched (slept after), never made faster than this machine.
MAX_SPEED = 100.0
TRAIN_SPEED_LIMIT = ("real training cannot run faster than this machine, so a worker's speed "
                     "can only slow it down: use at most 1 (workload: synthetic emulates "
                     "faster workers)")
# One schedule expands into at most this many timed changes over a run.
MAX_ACTIONS = 100_000
MAX_TRACE_BYTES = 1 << 20


def _level(name, help, **more):
    """A generator's value: a rate on a link, a relative speed for workers."""
    return Key(name, "rate", help, alt=Key("", "speed", "", low=0, high=MAX_SPEED, above=True), **more)


ENTRY = Section("dynamics[]", "one change at a time (`at`), a trace, or a generator; of a link "
                              "(`link`) or of compute speeds (`worker`, `dc`)", [
    Key("at", "time", "when, from the agents' start; the step generator's switch"),
    Key("link", "pair", "the WAN link that changes"),
    Key("direction", "word", "both directions, or only the first DC to the second", default="both",
        choices=("both", "forward")),
    Key("worker", "name", "the worker whose speed changes"),
    Key("dc", "name", "every worker of this DC"),
    Key("bw", "rate", "the link's new rate"),
    Key("delay", "time", "the link's new one-way delay", high=check.MAX_DELAY),
    Key("jitter", "time", "the link's new jitter", high=check.MAX_DELAY),
    Key("loss", "loss", "the link's new loss"),
    Key("down", "flag", "true cuts the link: every frame is dropped"),
    Key("up", "flag", "true restores a cut link"),
    Key("speed", "speed", "the new relative compute speed", low=0, high=MAX_SPEED, above=True),
    Key("trace", "text", "a CSV file of `time_s,bw[,delay,loss]` rows, beside the topology",
        what="a file name"),
    Key("loop", "flag", "repeat the trace: true after its own length, or with a period given as a "
                        "time", default=False, alt=Key("", "time", "", above=True)),
    Key("start", "time", "shifts a trace or a generator later", default=0),
    Key("generator", "word", "step, square, random_walk or uniform", choices=GENERATORS),
    _level("from", "step: the value before `at`"),
    _level("to", "step: the value from `at` on"),
    _level("low", "square, random_walk, uniform: the lowest value"),
    _level("high", "square, random_walk, uniform: the highest value"),
    Key("period", "time", "square: a high and a low half", above=True),
    _level("step", "random_walk: one step up or down"),
    Key("every", "time", "random_walk, uniform: time between two values", above=True),
    Key("seed", "whole", "random_walk, uniform: the same seed, the same values", default=0),
    _level("initial", "random_walk: where it starts", default_text="halfway between low and high"),
])
# Which keys each kind of entry takes, besides its target's (TARGET_KEYS).
ENTRY_KEYS = {"at": {"at"}, "trace": {"trace", "loop", "start"}}
TARGET_KEYS = {"link": {"link", "direction"}, "speed": {"worker", "dc"}}
VALUE_KEYS = {"link": set(LINK_SETTINGS) | {"up", "down"}, "speed": {"speed"}}


@dataclass(frozen=True)
class LinkAction:
    t: float
    a: str
    b: str
    both: bool = True
    rate: float = None
    delay: float = None
    jitter: float = None
    loss: float = None
    up: bool = None

    def changes(self):
        return {k: v for k, v in (("rate", self.rate), ("delay", self.delay), ("jitter", self.jitter),
                                  ("loss", self.loss), ("up", self.up)) if v is not None}


@dataclass(frozen=True)
class SpeedAction:
    t: float
    workers: tuple
    speed: float


@dataclass(frozen=True)
class Schedule:
    """A source of actions: fixed ones, or a generator/trace expanded up to
    a horizon.  `loop` repeats a trace with that period (0: no repeat)."""
    kind: str                  # at | trace | generator
    target: tuple              # ("link", a, b, both) or ("speed", workers)
    points: tuple = ()         # [(t, value dict)] for at/trace; loop repeats them
    loop: float = 0.0
    generator: tuple = ()      # (name, params dict) for generators

    def count(self, until):
        """How many actions `actions(until)` makes, from arithmetic alone, so
        a schedule of millions of changes is refused before it is expanded."""
        if self.kind == "generator":
            name, params = self.generator
            if name == "step":
                return 2
            spacing = params["period"] / 2 if name == "square" else params["every"]
            return int(max(0.0, until - params["start"]) / spacing) + 1
        if self.loop:
            return len(self.points) * (int(until / self.loop) + 1)
        return len(self.points)

    def actions(self, until):
        if self.kind == "generator":
            name, params = self.generator
            points = GENERATOR_FUNCS[name](until=until, **params)
        elif self.loop:
            points, k = [], 0
            while True:
                shifted = [(t + k * self.loop, v) for t, v in self.points]
                points += [p for p in shifted if p[0] <= until]
                if not shifted or shifted[0][0] + self.loop > until:
                    break
                k += 1
        else:
            points = [p for p in self.points if p[0] <= until]
        return [make_action(self.target, t, v) for t, v in points]


def make_action(target, t, values):
    if target[0] == "link":
        _, a, b, both = target
        return LinkAction(t=t, a=a, b=b, both=both, **values)
    return SpeedAction(t=t, workers=target[1], speed=values["speed"])


# ------------------------------------------------------------ generators


def step(start=0.0, at=0.0, before=None, after=None, key="rate", until=None):
    """Hold `before` from `start`, then `after` from `at`."""
    points = [(start, {key: before})] if before is not None else []
    return points + ([(at, {key: after})] if at <= until else [])


def square(low, high, period, start=0.0, key="rate", until=None):
    """high for the first half of each period, low for the second."""
    points, t, value = [], start, high
    while t <= until:
        points.append((round(t, 9), {key: value}))
        t += period / 2
        value = low if value == high else high
    return points


def random_walk(low, high, step_size, every, seed=0, start=0.0, initial=None, key="rate", until=None):
    """From `initial` (the middle by default), one step up or down every
    `every` seconds, kept within [low, high]; the same seed, the same walk."""
    rng = random.Random(seed)
    value = (low + high) / 2 if initial is None else initial
    points, t = [], start
    while t <= until:
        points.append((round(t, 9), {key: value}))
        value = min(high, max(low, value + rng.choice((-step_size, step_size))))
        t += every
    return points


def uniform(low, high, every, seed=0, start=0.0, key="rate", until=None):
    """A new value drawn uniformly from [low, high] every `every` seconds
    (NetStorm's dynamic WAN: each link direction redrawn every 180 s from
    20-155 Mbit/s); the same seed, the same draws."""
    rng = random.Random(seed)
    points, t = [], start
    while t <= until:
        points.append((round(t, 9), {key: rng.uniform(low, high)}))
        t += every
    return points


GENERATOR_FUNCS = {"step": step, "square": square, "random_walk": random_walk, "uniform": uniform}


# ------------------------------------------------------------ traces


class TraceError(ValueError):
    pass


def read_trace(path):
    """CSV rows `time_s,bw[,delay,loss]` -> [(t, {rate, delay, loss})].
    Lines starting with # are comments (a trace says where its shape comes
    from there); a header row starting with `time` is skipped.  Errors name
    the line and column, never what is written there: the path may be any
    file the user can name, read by root."""
    name = os.path.basename(path)
    points, last, first = [], -1.0, True
    for lineno, line in enumerate(_small_text(path).splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = [c.strip() for c in line.split(",")]
        if first and row[0].lower().startswith("time"):
            first = False
            continue
        first = False
        where = f"{name} line {lineno}"
        if not 2 <= len(row) <= 4:
            raise TraceError(f"{where}: expected time_s,bw[,delay,loss], got {len(row)} fields")
        t, values = _trace_row(row, where)
        if t < 0 or t <= last:
            raise TraceError(f"{where}, column 1: times must start at 0 or later and increase")
        last = t
        points.append((t, values))
    if not points:
        raise TraceError(f"{path} has no rows")
    return points


TRACE_COLUMNS = (("time_s", "a time in seconds like 2.5", float),
                 ("bw", "a rate like 50mbit", parse_rate),
                 ("delay", "a time like 40ms", parse_time),
                 ("loss", "a share like 0.5%", parse_fraction))


def _trace_row(row, where):
    """One row's fields -> (t, {rate, delay, loss}); empty delay and loss are unset."""
    parsed = []
    for column, (text, (key, form, parse)) in enumerate(zip(row, TRACE_COLUMNS), start=1):
        if column > 2 and not text:
            parsed.append(None)
            continue
        try:
            value = parse(text)
        except (ValueError, UnitError):
            value = None
        if value is None or not math.isfinite(value):
            raise TraceError(f"{where}, column {column}: {key} is not {form}")
        parsed.append(value)
    t, rate = parsed[0], parsed[1]
    if not 0 < rate <= check.MAX_RATE:
        raise TraceError(f"{where}, column 2: bw must be above zero and at most "
                         f"{format_rate(check.MAX_RATE)}")
    values = {"rate": rate}
    if len(parsed) > 2 and parsed[2] is not None:
        if parsed[2] > check.MAX_DELAY:
            raise TraceError(f"{where}, column 3: delay must be at most {check.MAX_DELAY:g}s")
        values["delay"] = parsed[2]
    if len(parsed) > 3 and parsed[3] is not None:
        if not 0 <= parsed[3] < 1:
            raise TraceError(f"{where}, column 4: loss must be at least 0% and below 100%")
        values["loss"] = parsed[3]
    return t, values


def _small_text(path):
    try:
        return read_small_text(path, f"trace {path}", MAX_TRACE_BYTES)
    except TextFileError as e:
        raise TraceError(str(e)) from None


def trace_period(points):
    """A looped trace repeats after its last row plus the last row spacing."""
    if len(points) < 2:
        return points[-1][0] + 1.0
    return points[-1][0] + (points[-1][0] - points[-2][0])


# ------------------------------------------------------------ parsing


def parse(raw, spec_links, workers_by_dc, base_dir, max_speed=MAX_SPEED):
    """The dynamics section -> (Schedule, ...).  spec_links: {(a, b)} of WAN
    links (either order); workers_by_dc: {dc: [worker names]}; max_speed:
    1.0 when the workers train for real.  Raises SpecError."""
    schedules = []
    for i, item in enumerate(raw):
        path = f"dynamics[{i}]"
        with SpecError.at(path, "a mapping like {at: 30s, link: [a, b], bw: 5mbit}"):
            schedules.append(_entry(item, path, spec_links, workers_by_dc, base_dir, max_speed))
    return tuple(schedules)


def _entry(item, path, spec_links, workers_by_dc, base_dir, max_speed):
    """One entry of the dynamics section -> its Schedule."""
    check.mapping(item, path, "like {at: 30s, link: [a, b], bw: 5mbit}")
    if "generator" in item:
        kind = "generator"
    elif ("at" in item) == ("trace" in item):
        raise SpecError(path, "needs exactly one of at, trace or generator")
    else:
        kind = "at" if "at" in item else "trace"
    target = _target(item, path, spec_links, workers_by_dc)
    p = lambda key: f"{path}.{key}"  # noqa: E731
    value_keys, target_keys = VALUE_KEYS[target[0]], TARGET_KEYS[target[0]]
    if kind == "at":
        check.keys(item, ENTRY_KEYS["at"] | target_keys | value_keys, path)
        values = _values(item, target, path, max_speed)
        if not values:
            raise SpecError(path, "says when but not what: give "
                            + ("bw, delay, jitter, loss, down or up" if target[0] == "link" else "speed"))
        return Schedule("at", target, ((ENTRY["at"].check(item["at"], p("at")), values),))
    if kind == "trace":
        check.keys(item, ENTRY_KEYS["trace"] | target_keys, path)
        if target[0] != "link":
            raise SpecError(p("trace"), "a trace drives a link: give link: [a, b]")
        if not ENTRY["trace"].check(item["trace"], p("trace")):
            raise SpecError(p("trace"), f"{shown(item['trace'])} is not a file name")
        trace_path = os.path.join(base_dir, item["trace"])
        try:
            points = read_trace(trace_path)
        except TraceError as e:
            raise SpecError(p("trace"), str(e)) from None
        start = ENTRY.read(item, "start", path)
        points = tuple((t + start, v) for t, v in points)
        loop = item.get("loop", ENTRY["loop"].default)
        period = 0.0
        if loop is True:
            period = trace_period([(t - start, v) for t, v in points])
        elif loop not in (False, None):
            period = check.duration(loop, p("loop"))
            if period <= 0:
                raise SpecError(p("loop"), "must be above zero (or true: the trace's own length)")
        return Schedule("trace", target, points, loop=period)
    return _generator(item, target, path, target_keys, max_speed)


def _target(item, path, spec_links, workers_by_dc):
    if "link" in item:
        link = item["link"]
        if not isinstance(link, list) or len(link) != 2 or not all(isinstance(e, str) for e in link):
            raise SpecError(f"{path}.link", f"{shown(link)} must name two data centers, e.g. [a, b]")
        a, b = link
        if (a, b) not in spec_links and (b, a) not in spec_links:
            raise SpecError(f"{path}.link", f"there is no WAN link between {a} and {b}")
        direction = ENTRY.read(item, "direction", path)
        return ("link", a, b, direction == "both")
    if "worker" in item:
        workers = [w for ws in workers_by_dc.values() for w in ws]
        return ("speed", (check.word(item["worker"], f"{path}.worker", workers, "worker"),))
    if "dc" in item:
        dc = check.word(item["dc"], f"{path}.dc", list(workers_by_dc), "data center")
        return ("speed", tuple(workers_by_dc[dc]))
    raise SpecError(path, "says what changes nowhere: give link: [a, b], worker: NAME or dc: NAME")


def _values(item, target, path, max_speed):
    p = lambda key: f"{path}.{key}"  # noqa: E731
    values = {}
    if target[0] == "speed":
        if "speed" in item:
            values["speed"] = speed(item["speed"], p("speed"), max_speed)
        return values
    if "bw" in item:
        values["rate"] = ENTRY["bw"].check(item["bw"], p("bw"))
    for key in ("delay", "jitter", "loss"):
        if key in item:
            values[key] = ENTRY[key].check(item[key], p(key))
    for key in ("down", "up"):
        if key in item and ENTRY[key].check(item[key], p(key)):
            values["up"] = key == "up"
    return values


def speed(value, path, max_speed=MAX_SPEED):
    """A worker's relative compute speed (1.0 = reference); above 1 only
    where the workload can emulate it (`max_speed`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SPEED:
        raise SpecError(path, f"{shown(value)} is not a relative speed (a number above 0 and at most "
                              f"{MAX_SPEED:g}, 1.0 = reference)")
    if value > max_speed:
        raise SpecError(path, f"{value:g}: {TRAIN_SPEED_LIMIT}")
    return float(value)


def _generator(item, target, path, target_keys, max_speed):
    p = lambda key: f"{path}.{key}"  # noqa: E731
    name = ENTRY["generator"].check(item["generator"], p("generator"))
    extra = GENERATOR_KEYS[name]
    check.keys(item, {"generator", "start"} | extra | target_keys, path)
    key = "rate" if target[0] == "link" else "speed"

    def value(k):
        if k not in item:
            needed = ", ".join(sorted(extra - {"seed", "initial"}))
            raise SpecError(p(k), f"missing: the {name} generator needs {needed}")
        return ENTRY[k].check(item[k], p(k)) if key == "rate" else speed(item[k], p(k), max_speed)

    start = ENTRY.read(item, "start", path)
    if name == "step":
        params = {"start": start, "at": ENTRY["at"].check(item.get("at", 0), p("at")),
                  "before": value("from"), "after": value("to"), "key": key}
    elif name == "square":
        low, high = value("low"), value("high")
        period = ENTRY["period"].check(item.get("period", 0), p("period"))
        params = {"low": low, "high": high, "period": period, "start": start, "key": key}
    else:
        low, high = value("low"), value("high")
        if low >= high:
            raise SpecError(p("high"), "must be above low")
        every = ENTRY["every"].check(item.get("every", 0), p("every"))
        seed = ENTRY.read(item, "seed", path)
        params = {"low": low, "high": high, "every": every, "seed": seed, "start": start,
                  "key": key}
        if name == "random_walk":
            params.update(step_size=value("step"),
                          initial=value("initial") if "initial" in item else None)
    return Schedule("generator", target, generator=(name, params))
