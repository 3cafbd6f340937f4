"""What every plug-in kind shares: declared options and one registry style.

A plug-in is a class.  It names itself (`name`), says in one line what it
is (`description`) and declares its options, each an `Option`: a name, a
default, the values it may take and one line of help.  The validator checks
a topology's options against these declarations, the agents read them back
with their defaults filled in, and the docs and the CLI's help are drawn
from them, so the three cannot disagree.

Every kind (sync scheme, overlay, coflow policy, model, dataset, workload)
has one `Registry`.  A plug-in is named in topo.yaml in one of three ways:

- a built-in name (`ssgd`), which the registry maps to `module:Class`;
- the name of an installed entry point in the kind's group
  (`geo_testbed.sync`, `geo_testbed.overlay`, ...);
- `module:attribute`, where the module is importable or is a file named by
  its path (`./my_sync.py:Scheme`, relative to the topology's folder).

Built-ins register exactly as a user's plug-in does: by `module:Class`.
"""

import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass

KINDS = ("sync", "overlay", "coflow", "model", "dataset", "workload", "metric")
ENTRY_POINT_GROUP = "geo_testbed.{kind}"

# What a sync scheme may need (its NEEDS) and an overlay or the run may
# provide (an overlay's PROVIDES; the coordinator every experiment runs).
CAPABILITIES = {
    "trees": "aggregation trees in the data plane",
    "star": "every worker connected straight to the roots",
    "coordinator": "a coordinator service",
}


def mismatch(scheme, overlay, provided_by_run=("coordinator",)):
    """Why sync scheme `scheme` cannot run over overlay `overlay` (their
    classes), in one sentence, or None."""
    provided = set(overlay.PROVIDES) | set(provided_by_run)
    missing = sorted(set(scheme.NEEDS) - provided)
    if not missing:
        return None
    what = " and ".join(CAPABILITIES.get(m, m) for m in missing)
    return f"{scheme.NAME} needs {what}, which {overlay.NAME} does not provide"


class OptionError(ValueError):
    """An option value a plug-in does not take; `key` names the option."""

    def __init__(self, key, message):
        self.key = key
        self.message = message
        super().__init__(message)


class PluginError(ValueError):
    """A plug-in that cannot be found, loaded or used; one sentence."""


def shown(value, limit=40):
    """A value quoted in an error, cut short: a sentence, not a dump."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Option:
    """One option of a plug-in.  Its type follows from the declaration:
    `choices` make it a word from a list; otherwise the default's type does
    (a whole number, a number, a string, a list).  Numbers take `low` and
    `high` (inclusive); a list takes `item`, an Option its every element
    must satisfy (its name and default unused)."""

    name: str
    default: object
    help: str = ""
    low: float = None
    high: float = None
    choices: tuple = None
    item: "Option" = None
    type: str = None         # the kind, where the default (None: not set) does not say it

    @property
    def kind(self):
        if self.type is not None:
            return self.type
        if self.choices is not None:
            return "word"
        if isinstance(self.default, bool):
            return "flag"
        if isinstance(self.default, int):
            return "whole"
        if isinstance(self.default, float):
            return "number"
        if isinstance(self.default, str):
            return "text"
        if isinstance(self.default, (list, tuple)):
            return "list"
        raise TypeError(f"option {self.name}: no type for a default of {self.default!r}")

    def values(self):
        """The values it takes, as the docs say it: `0..64`, `a, b`, ..."""
        kind = self.kind
        if kind == "word":
            return ", ".join(self.choices)
        if kind in ("whole", "number"):
            low = "" if self.low is None else self.low
            high = "" if self.high is None else self.high
            return f"{low}..{high}" if (low, high) != ("", "") else "any"
        if kind == "list" and self.item is not None:
            return f"a list of {self.item.values()}"
        return {"flag": "true, false", "text": "a string", "list": "a list"}[kind]

    def check(self, value):
        """`value` as the plug-in gets it; OptionError when it is not one
        this option takes."""
        kind = self.kind
        if value is None and self.default is None:
            return None                 # left unset
        if kind == "word":
            if value not in self.choices:
                raise OptionError(self.name, f"{shown(value)} must be one of {', '.join(self.choices)}")
            return value
        if kind == "flag":
            if not isinstance(value, bool):
                raise OptionError(self.name, f"{shown(value)} must be true or false")
            return value
        if kind in ("whole", "number"):
            whole = kind == "whole"
            low = -float("inf") if self.low is None else self.low
            high = float("inf") if self.high is None else self.high
            if not _is_number(value) or (whole and not isinstance(value, int)) \
                    or not low <= value <= high:
                raise OptionError(self.name, f"{shown(value)} must be a{' whole' if whole else ''} "
                                             f"number in {self.values()}")
            return int(value) if whole else float(value)
        if kind == "text":
            if not isinstance(value, str):
                raise OptionError(self.name, f"{shown(value)} must be a string")
            return value
        if not isinstance(value, (list, tuple)):
            raise OptionError(self.name, f"{shown(value)} must be a list")
        if self.item is None:
            return list(value)
        out = []
        for i, v in enumerate(value):
            try:
                out.append(self.item.check(v))
            except OptionError as e:
                raise OptionError(self.name, f"item {i}: {e.message}") from None
        return out


def option_field(default, help, low=None, high=None, choices=None):
    """A field of a typed options dataclass, declared as an Option is."""
    return dataclasses.field(default=default, metadata={"option": Option(
        "", default, help, low=low, high=high, choices=choices)})


def declared(options_class):
    """(Option, ...) of a dataclass whose fields are `option_field`s."""
    return tuple(dataclasses.replace(f.metadata["option"], name=f.name)
                 for f in dataclasses.fields(options_class))


def check_options(declared, raw, owner):
    """Options as `raw` gives them (a mapping, maybe empty), checked against
    `declared` ([Option]): unknown names and bad values raise OptionError.
    Returns only the options given; `settings` fills in the defaults."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise OptionError(None, f"must be a mapping of {owner}'s parameters")
    by_name = {o.name: o for o in declared}
    out = {}
    for key, value in raw.items():
        option = by_name.get(key)
        if option is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise OptionError(key, f"{owner} has no parameter {key!r} (it has: {known})")
        out[key] = option.check(value)
    return out


def settings(declared, raw=None):
    """Every declared option's value: its default unless `raw` sets it."""
    out = {o.name: o.default for o in declared}
    out.update(raw or {})
    return out


# ------------------------------------------------------------ loading


@dataclass(frozen=True)
class Origin:
    """Where a plug-in's code came from: how it was named, the module and
    file it was loaded from, and a hash of that file's source, so a result
    names exactly the code that made it."""

    ref: str            # as topo.yaml names it
    kind: str
    module: str
    attribute: str
    file: str           # absolute path of the module's source ("" when it has none)
    sha256: str         # of the file's bytes ("" when it has none)
    builtin: bool

    def to_dict(self):
        return {"ref": self.ref, "kind": self.kind, "module": self.module,
                "attribute": self.attribute, "file": self.file, "sha256": self.sha256,
                "builtin": self.builtin}


def _file_hash(path):
    if not path or not os.path.isfile(path):
        return ""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _module_from_file(path):
    """Import the module in `path` under a name of its own (a hash of its
    path and source in it, so two files never meet in sys.modules, and an
    edited file is a new module)."""
    digest = hashlib.sha256(f"{path}\0{_file_hash(path)}".encode()).hexdigest()[:12]
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"geo_testbed_plugin_{stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _looks_like_file(module):
    return module.endswith(".py") or os.sep in module or module.startswith(".")


class Registry:
    """The plug-ins of one kind.  `builtins` maps names to `module:Class`;
    `aliases` maps an old name to (its new name, a sentence a user sees
    when the old one is used)."""

    def __init__(self, kind, base, builtins, aliases=None, what=None):
        if kind not in KINDS:
            raise ValueError(f"unknown plug-in kind {kind!r}")
        self.kind = kind
        self.what = what or kind             # how a sentence names one
        self.base = base
        self.builtins = dict(builtins)
        self.aliases = dict(aliases or {})
        self.group = ENTRY_POINT_GROUP.format(kind=kind)

    def entry_points(self):
        """{name: entry point} installed in this kind's group."""
        try:
            found = importlib.metadata.entry_points(group=self.group)
        except TypeError:                         # Python < 3.10
            found = importlib.metadata.entry_points().get(self.group, [])
        return {ep.name: ep for ep in found}

    def names(self):
        """Every name this kind answers to without a `module:attribute`:
        built-ins, then installed entry points, sorted."""
        return sorted(self.builtins) + sorted(set(self.entry_points()) - set(self.builtins))

    def deprecated(self, ref):
        """The sentence a user sees for an old name, or None."""
        alias = self.aliases.get(ref)
        return alias[1] if alias else None

    def load(self, ref, base_dir=None):
        """(the plug-in's class, its Origin) for a name as topo.yaml gives
        it; PluginError with one sentence when it cannot be had."""
        if not isinstance(ref, str) or not ref:
            raise PluginError(f"{shown(ref)} is not the name of a {self.what} plug-in")
        name = self.aliases[ref][0] if ref in self.aliases else ref
        builtin = name in self.builtins
        if builtin:
            target = self.builtins[name]
        elif ":" in name:
            target = name
        else:
            ep = self.entry_points().get(name)
            if ep is None:
                raise PluginError(f"unknown {self.what} {shown(ref)}; available: "
                                  f"{', '.join(self.names())}, or module:attribute")
            target = ep.value
        module_name, _, attribute = target.rpartition(":")
        if not module_name or not attribute:
            raise PluginError(f"{shown(ref)} is not module:attribute")
        try:
            if _looks_like_file(module_name):
                path = module_name if os.path.isabs(module_name) else \
                    os.path.join(base_dir or os.getcwd(), module_name)
                path = os.path.abspath(path)
                if not os.path.isfile(path):
                    raise PluginError(f"{self.what} {shown(ref)}: there is no file {path}")
                module = _module_from_file(path)
            else:
                module = importlib.import_module(module_name)
        except PluginError:
            raise
        except Exception as e:      # noqa: BLE001 - a user's module may fail in any way
            raise PluginError(f"{self.what} {shown(ref)} cannot be imported: "
                              f"{type(e).__name__}: {e}") from None
        cls = getattr(module, attribute, None)
        if cls is None:
            raise PluginError(f"{self.what} {shown(ref)}: {module.__name__} has no {attribute}")
        self.check(cls, ref)
        path = getattr(module, "__file__", "") or ""
        origin = Origin(ref=ref, kind=self.kind, module=module.__name__, attribute=attribute,
                        file=os.path.abspath(path) if path else "", sha256=_file_hash(path),
                        builtin=builtin)
        return cls, origin

    def check(self, cls, ref):
        """Refuse what is not a plug-in of this kind, naming what it lacks."""
        if not inspect.isclass(cls) or not issubclass(cls, self.base):
            raise PluginError(f"{self.what} {shown(ref)} is not a subclass of "
                              f"{self.base.__module__}.{self.base.__qualname__}")
        missing = sorted(getattr(cls, "__abstractmethods__", ()))
        if missing:
            raise PluginError(f"{self.what} {shown(ref)} lacks the required hook"
                              f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        for o in getattr(cls, "options", ()):
            if not isinstance(o, Option):
                raise PluginError(f"{self.what} {shown(ref)}: its options must be Option "
                                  f"declarations, not {shown(o)}")

    def builtin_classes(self):
        """{name: class} of every built-in, loaded."""
        return {name: self.load(name)[0] for name in sorted(self.builtins)}
