"""The layout's rules, read from the code's own imports: no import circle
inside `agents/` or `testbed/`, and nothing in `agents/` imports
`testbed/` (agents run inside emulated hosts, where the orchestrator has
no business).  An import anywhere in a module counts, a lazy one inside a
function too: a circle through a lazy import is still a circle in the
design."""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PACKAGES = ("agents", "testbed")


def modules(package):
    """{dotted module name: path} of every module under a package."""
    out = {}
    base = os.path.join(ROOT, package)
    for folder, _, files in os.walk(base):
        for f in files:
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(folder, f), ROOT)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = os.path.join(folder, f)
    return out


def imported(path, name, known):
    """The known modules that the module `name` at `path` imports.  `from
    package import name` counts as an import of the submodule where one
    exists, else of the package."""
    tree = ast.parse(open(path).read(), path)
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".")
                base = parts if is_package else parts[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                       for a in node.names]
        else:
            continue
        for t in targets:
            # The nearest known module: `agents.sync.ssgd.Rule` -> agents.sync.ssgd.
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph():
    known = {}
    for p in PACKAGES:
        known.update(modules(p))
    return {name: imported(path, name, known) for name, path in known.items()}


def circles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_circle_finder_finds_a_hand_made_circle_and_nothing_in_a_chain():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_reader_sees_relative_lazy_and_from_package_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def later():\n    from .sib import thing\n"
                 "from agents.pkg import sub\nimport agents.other.deep\n")
    known = {"agents.pkg", "agents.pkg.sub", "agents.pkg.m", "agents.pkg.sib", "agents.other"}
    assert imported(str(f), "agents.pkg.m", known) == {"agents.pkg.sib", "agents.pkg.sub",
                                                       "agents.other"}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package):
    edges = {m: {t for t in ts if t.split(".")[0] == package}
             for m, ts in graph().items() if m.split(".")[0] == package}
    found = circles(edges)
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_agents_never_import_the_orchestrator():
    bad = sorted(f"{m} imports {t}" for m, ts in graph().items() if m.split(".")[0] == "agents"
                 for t in ts if t.split(".")[0] == "testbed")
    assert not bad, "\n".join(bad)
