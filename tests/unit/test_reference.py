"""The reference pages are drawn from the code's declarations: a page that
differs from what the declarations draw is stale, and fails here."""

from testbed import reference


def test_every_reference_page_is_what_the_declarations_draw():
    assert reference.stale() == [], "run: python -m testbed.reference"


def test_a_declared_option_shows_in_the_systems_page_with_its_default_and_range():
    page = reference.systems_page()
    assert "| `k` | `2` | 1..64 | children per node of the tree of DCs |" in page
    assert "### `planner`" in page and "formerly `optimal`" in page
    assert "### `optimal`" not in page
