"""The reference pages are drawn from the code's declarations: a page that
differs from what the declarations draw is stale, and fails here."""

from testbed.docs import pages
from testbed.docs.systems import systems_page
from testbed.docs.topo_yaml import topo_yaml_page
from testbed.spec import topology


def test_every_reference_page_is_what_the_declarations_draw():
    assert pages.stale() == [], "run: python -m testbed.docs"


def test_a_changed_page_is_found_stale_and_written_again(tmp_path):
    written = list(pages.write(tmp_path))
    assert written == list(pages.PAGES) and pages.stale(tmp_path) == []
    (tmp_path / "docs" / "topo-yaml.md").write_text("# edited by hand\n")
    assert pages.stale(tmp_path) == ["docs/topo-yaml.md"]


def test_a_declared_option_shows_in_the_systems_page_with_its_default_and_range():
    page = systems_page()
    assert "| `k` | `2` | 1..64 | children per node of the tree of DCs |" in page
    assert "### `planner`" in page and "formerly `optimal`" in page
    assert "### `optimal`" not in page


def test_every_declared_key_of_every_section_has_a_row_in_the_topo_yaml_page():
    page = topo_yaml_page()
    for section in topology.SECTIONS:
        assert f"## `{section.path}`" in page or not section.path
        for key in section:
            assert key.help and f"| `{key.name}` |" in page, (section.path, key.name)


def test_a_key_s_row_gives_its_type_unit_default_range_and_help():
    page = topo_yaml_page()
    assert "| `iterations` | whole number |  | `200` | 1..10000000 | iterations |" in page
    assert "| `time` | time | s | `10min` | above 0s | from the agents' start |" in page
    assert "| `delay` | time | s | `0`, or the preset's | 0..60s | one-way delay |" in page
    assert "| `pairs` | word |  | `all` | `all`, `neighbours` |" in page
