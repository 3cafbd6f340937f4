import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """VM tests run last: they take minutes, and a Mininet failure on the
    host is worth seeing first."""
    items.sort(key=lambda item: item.get_closest_marker("vm") is not None)
