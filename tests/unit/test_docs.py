"""The docs hold together: every relative link in the README and docs/
reaches a file of the repository, and a link to a heading reaches a heading
that exists; every shipped topology names the committed schema for its
editor."""

import glob
import os
import re

import pytest

from testbed.docs.markdown import anchor
from testbed.docs.topo_yaml import STARTERS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.M)


def headings(path):
    text = re.sub(r"```.*?```", "", open(path).read(), flags=re.S)
    return {anchor(h.strip()) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def links(path):
    text = re.sub(r"```.*?```", "", open(path).read(), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_relative_link_reaches_a_file_and_its_heading(page):
    for target in links(page):
        rel, _, fragment = target.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(page), rel)) if rel else page
        assert os.path.exists(path), f"{target}: no such file"
        if fragment:
            assert fragment in headings(path), f"{target}: no such heading"


def test_the_link_check_sees_a_broken_link_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](missing.md) [b](#title) [c](#nowhere) [d](https://x.org)\n"
                    "```\n[e](inside-a-code-block.md)\n```\n")
    assert links(str(page)) == ["missing.md", "#title", "#nowhere"]
    assert headings(str(page)) == {"title"}


def test_every_shipped_topology_names_the_committed_schema_for_its_editor():
    files = glob.glob(os.path.join(ROOT, "topologies", "*.yaml")) + \
        glob.glob(os.path.join(ROOT, "results", "*", "base.yaml")) + \
        glob.glob(os.path.join(ROOT, "examples", "programs", "**", "*.yaml"), recursive=True)
    for path in files:
        found = MODELINE.search(open(path).read())
        assert found, f"{path}: no yaml-language-server line"
        target = os.path.normpath(os.path.join(os.path.dirname(path), found.group(1)))
        assert target == os.path.join(ROOT, "docs", "topo.schema.json"), path


def test_the_reference_lists_every_shipped_topology_to_start_from():
    shipped = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "topologies", "*.yaml"))}
    assert {name for name, _ in STARTERS} == shipped
