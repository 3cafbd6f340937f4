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

from testbed.spec.textfile import TextFileError, read_small_text
from testbed.spec.units import UnitError, parse_fraction, parse_rate, parse_time, shown

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
    if rate <= 0:
        raise TraceError(f"{where}, column 2: bw must be above zero")
    values = {"rate": rate}
    if len(parsed) > 2 and parsed[2] is not None:
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


def parse(raw, spec_links, workers_by_dc, base_dir, error, check_keys, max_speed=MAX_SPEED):
    """The dynamics section -> (Schedule, ...).  spec_links: {(a, b)} of WAN
    links (either order); workers_by_dc: {dc: [worker names]}; error is the
    spec's error class (error.at(path, expected) validates one entry);
    max_speed: 1.0 when the workers train for real."""
    schedules = []
    for i, item in enumerate(raw):
        path = f"dynamics[{i}]"
        with error.at(path, "a mapping like {at: 30s, link: [a, b], bw: 5mbit}"):
            schedules.append(_entry(item, path, spec_links, workers_by_dc, base_dir, error,
                                    check_keys, max_speed))
    return tuple(schedules)


def _entry(item, path, spec_links, workers_by_dc, base_dir, error, check_keys, max_speed):
    """One entry of the dynamics section -> its Schedule."""
    all_workers = [w for ws in workers_by_dc.values() for w in ws]
    if not isinstance(item, dict):
        raise error(path, "must be a mapping, e.g. {at: 30s, link: [a, b], bw: 5mbit}")
    if "generator" in item:
        kind = "generator"
    elif ("at" in item) == ("trace" in item):
        raise error(path, "needs exactly one of at, trace or generator")
    else:
        kind = "at" if "at" in item else "trace"
    target = _target(item, path, spec_links, workers_by_dc, all_workers, error)
    p = lambda key: f"{path}.{key}"  # noqa: E731
    value_keys = set(LINK_SETTINGS) | {"up", "down"} if target[0] == "link" else {"speed"}
    target_keys = {"link", "direction"} if target[0] == "link" else {"worker", "dc"}
    if kind == "at":
        check_keys(item, {"at"} | target_keys | value_keys, path)
        values = _values(item, target, path, error, max_speed)
        if not values:
            raise error(path, "says when but not what: give "
                        + ("bw, delay, jitter, loss, down or up" if target[0] == "link" else "speed"))
        return Schedule("at", target, ((_time(item["at"], p("at"), error), values),))
    if kind == "trace":
        check_keys(item, {"trace", "loop", "start"} | target_keys, path)
        if target[0] != "link":
            raise error(p("trace"), "a trace drives a link: give link: [a, b]")
        if not isinstance(item["trace"], str) or not item["trace"]:
            raise error(p("trace"), f"{shown(item['trace'])} is not a file name")
        trace_path = os.path.join(base_dir, item["trace"])
        try:
            points = read_trace(trace_path)
        except TraceError as e:
            raise error(p("trace"), str(e)) from None
        start = _time(item.get("start", 0), p("start"), error)
        points = tuple((t + start, v) for t, v in points)
        loop = item.get("loop", False)
        period = 0.0
        if loop is True:
            period = trace_period([(t - start, v) for t, v in points])
        elif loop not in (False, None):
            period = _time(loop, p("loop"), error)
            if period <= 0:
                raise error(p("loop"), "must be above zero (or true: the trace's own length)")
        return Schedule("trace", target, points, loop=period)
    return _generator(item, target, path, target_keys, error, check_keys, max_speed)


def _time(value, path, error):
    try:
        t = parse_time(value)
    except UnitError as e:
        raise error(path, str(e)) from None
    if t < 0:
        raise error(path, "must not be negative")
    return t


def _target(item, path, spec_links, workers_by_dc, all_workers, error):
    if "link" in item:
        link = item["link"]
        if not isinstance(link, list) or len(link) != 2 or not all(isinstance(e, str) for e in link):
            raise error(f"{path}.link", f"{shown(link)} must name two data centers, e.g. [a, b]")
        a, b = link
        if (a, b) not in spec_links and (b, a) not in spec_links:
            raise error(f"{path}.link", f"there is no WAN link between {a} and {b}")
        direction = item.get("direction", "both")
        if direction not in ("both", "forward"):
            raise error(f"{path}.direction", f"{direction!r}: use both or forward (a -> b)")
        return ("link", a, b, direction == "both")
    if "worker" in item:
        if not isinstance(item["worker"], str) or item["worker"] not in all_workers:
            raise error(f"{path}.worker", f"unknown worker {shown(item['worker'])} "
                                          f"(workers: {', '.join(all_workers)})")
        return ("speed", (item["worker"],))
    if "dc" in item:
        if not isinstance(item["dc"], str) or item["dc"] not in workers_by_dc:
            raise error(f"{path}.dc", f"unknown data center {shown(item['dc'])}")
        return ("speed", tuple(workers_by_dc[item["dc"]]))
    raise error(path, "says what changes nowhere: give link: [a, b], worker: NAME or dc: NAME")


def _values(item, target, path, error, max_speed):
    p = lambda key: f"{path}.{key}"  # noqa: E731
    values = {}
    if target[0] == "speed":
        if "speed" in item:
            values["speed"] = _speed(item["speed"], p("speed"), error, max_speed)
        return values
    parsers = {"bw": ("rate", parse_rate), "delay": ("delay", parse_time),
               "jitter": ("jitter", parse_time), "loss": ("loss", parse_fraction)}
    for key, (name, parse_one) in parsers.items():
        if key in item:
            try:
                values[name] = parse_one(item[key])
            except UnitError as e:
                raise error(p(key), str(e)) from None
    if values.get("rate", 1) <= 0:
        raise error(p("bw"), "must be above zero")
    if not 0 <= values.get("loss", 0) < 1:
        raise error(p("loss"), "must be at least 0% and below 100%")
    if item.get("down") is True:
        values["up"] = False
    if item.get("up") is True:
        values["up"] = True
    return values


def _speed(value, path, error, max_speed=MAX_SPEED):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SPEED:
        raise error(path, f"{shown(value)} is not a relative speed (a number above 0 and at most "
                          f"{MAX_SPEED:g}, 1.0 = reference)")
    if value > max_speed:
        raise error(path, f"{value:g}: {TRAIN_SPEED_LIMIT}")
    return float(value)


def _generator(item, target, path, target_keys, error, check_keys, max_speed):
    p = lambda key: f"{path}.{key}"  # noqa: E731
    name = item["generator"]
    if name not in GENERATORS:
        raise error(p("generator"), f"unknown generator {name!r}; available: {', '.join(GENERATORS)}")
    extra = GENERATOR_KEYS[name]
    check_keys(item, {"generator", "start"} | extra | target_keys, path)
    key = "rate" if target[0] == "link" else "speed"

    def value(k):
        if k not in item:
            needed = ", ".join(sorted(extra - {"seed", "initial"}))
            raise error(p(k), f"missing: the {name} generator needs {needed}")
        if key == "rate":
            try:
                v = parse_rate(item[k])
            except UnitError as e:
                raise error(p(k), str(e)) from None
            if v <= 0:
                raise error(p(k), "must be above zero")
            return v
        return _speed(item[k], p(k), error, max_speed)

    start = _time(item.get("start", 0), p("start"), error)
    if name == "step":
        params = {"start": start, "at": _time(item.get("at", 0), p("at"), error),
                  "before": value("from"), "after": value("to"), "key": key}
    elif name == "square":
        low, high = value("low"), value("high")
        period = _time(item.get("period", 0), p("period"), error)
        if period <= 0:
            raise error(p("period"), "must be above zero")
        params = {"low": low, "high": high, "period": period, "start": start, "key": key}
    else:
        low, high = value("low"), value("high")
        if low >= high:
            raise error(p("high"), "must be above low")
        every = _time(item.get("every", 0), p("every"), error)
        if every <= 0:
            raise error(p("every"), "must be above zero")
        seed = item.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise error(p("seed"), f"{seed!r} must be a whole number")
        params = {"low": low, "high": high, "every": every, "seed": seed, "start": start,
                  "key": key}
        if name == "random_walk":
            params.update(step_size=value("step"),
                          initial=value("initial") if "initial" in item else None)
    return Schedule("generator", target, generator=(name, params))
