"""What a key of topo.yaml is, declared once: its kind, its default, its
range or choices and one line of help.

Each section's parser holds a `Section` of `Key`s and reads its defaults
and ranges from them (`Key.read` checks a value with the validation kit);
the reference page (docs/topo-yaml.md) and the JSON Schema (`testbed
schema`) are drawn from the same declarations, so the three cannot drift.

Kinds that `Key.check` knows: whole, number, time, rate, size, loss, share,
word, flag, text.  The others (name, speed, queue, plugin, options,
mapping, list, pair, models) are checked by their section's parser, which
takes its limits from the declaration's own constants; the reference and
the schema still know their shape.
"""

from dataclasses import dataclass

from testbed.spec import validate as check
from testbed.spec.units import parse_fraction, shown
from testbed.spec.validate import SpecError, path_of


@dataclass(frozen=True)
class Key:
    """One key of a mapping in topo.yaml.  `default` is written as topo.yaml
    writes it (`10min`, `1gbit`); None means there is none, and
    `default_text` says in words what happens then.  `low`/`high` bound a
    number, a time (`high` only) or a size (written `1kib`); `above` makes
    `low` exclusive.  A mapping's keys are `section`; a list's elements are
    `item`.  `alt` is a second form the key takes (probe: true)."""

    name: str
    kind: str
    help: str
    default: object = None
    low: object = None
    high: object = None
    above: bool = False
    choices: tuple = None
    what: str = None             # how an error names the value (`unknown probe pairs 'x'`)
    required: bool = False
    default_text: str = None
    section: "Section" = None
    item: "Key" = None
    length: tuple = None         # a list's (fewest, most) elements
    registry: object = None      # plugin: the registry that knows the built-ins
    alt: "Key" = None

    def read(self, raw, parent):
        """The value mapping `raw` gives this key, or its default, checked."""
        return self.check(raw.get(self.name, self.default), path_of(parent, self.name))

    def check(self, value, path):
        """`value` as the code uses it (units resolved); SpecError naming
        `path` when this key does not take it."""
        kind = self.kind
        if kind == "whole":
            return check.whole(value, path, self.low, self.high)
        if kind == "number":
            return check.number(value, path, self.low, self.high, above=self.above)
        if kind == "time":
            return check.duration(value, path, positive=self.above, upper=self.high)
        if kind == "rate":
            return check.rate(value, path)
        if kind == "size":
            return check.size(value, path, self.low, self.high)
        if kind == "loss":
            return check.loss(value, path)
        if kind == "share":
            share = check.unit(parse_fraction, value, path)
            if not self.low < share <= self.high:
                raise SpecError(path, f"{shown(value)} must be above {percent(self.low)} "
                                      f"and at most {percent(self.high)}")
            return share
        if kind == "word":
            return check.word(value, path, self.choices, self.what or self.name)
        if kind == "flag":
            if not isinstance(value, bool):
                raise SpecError(path, f"{value!r} is not true or false")
            return value
        if kind == "text":
            if not isinstance(value, str):
                raise SpecError(path, f"{shown(value)} is not {self.what or 'a string'}")
            return value
        raise TypeError(f"key {self.name}: its parser checks a {kind}")


def percent(fraction):
    return f"{fraction * 100:g}%"


class Section:
    """The keys of one mapping of topo.yaml, in the order the reference
    lists them.  `path` is where it sits (`experiment.probe`,
    `wan[]` for every entry of a list); `help` one line about it."""

    def __init__(self, path, help, keys):
        self.path = path
        self.help = help
        self.keys = tuple(keys)
        self.by_name = {k.name: k for k in self.keys}
        if len(self.by_name) != len(self.keys):
            raise ValueError(f"section {path} declares a key twice")

    def __getitem__(self, name):
        return self.by_name[name]

    def __iter__(self):
        return iter(self.keys)

    @property
    def names(self):
        return set(self.by_name)

    def check_keys(self, raw, path):
        """Refuse a key this section does not declare."""
        check.keys(raw, self.names, path)

    def read(self, raw, name, path):
        """Key `name`'s value in mapping `raw` at `path`, checked."""
        return self.by_name[name].read(raw, path)
