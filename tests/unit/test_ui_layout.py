import pytest

from testbed.ui.layout import circle, positions
from testbed.ui.server import token_ok


def test_dcs_named_after_preset_regions_sit_where_the_cities_are():
    where = positions(["virginia", "frankfurt", "tokyo"])
    # West to east, and Frankfurt (50.1 N) the northernmost: y grows downwards.
    assert where["virginia"][0] == pytest.approx(0.1) and where["tokyo"][0] == pytest.approx(0.9)
    assert where["virginia"][0] < where["frankfurt"][0] < where["tokyo"][0]
    assert where["frankfurt"][1] == pytest.approx(0.1) and where["tokyo"][1] == pytest.approx(0.9)


def test_other_names_go_on_a_circle_once_each_the_same_every_time():
    names = ["hub", "dc2", "dc1", "edge"]
    where = positions(names)
    assert where == positions(names) and list(where) == names
    assert len(set(where.values())) == 4
    # In the topology's order, the first at the top, then clockwise: right, bottom, left.
    assert where["hub"] == pytest.approx((0.5, 0.1))
    assert where["dc2"] == pytest.approx((0.9, 0.5))
    assert where["dc1"] == pytest.approx((0.5, 0.9))
    assert where["edge"] == pytest.approx((0.1, 0.5))


def test_one_unknown_name_puts_every_dc_on_the_circle():
    assert positions(["virginia", "mars"]) == circle(["virginia", "mars"])


def test_only_the_run_s_own_token_passes():
    assert token_ok("s3cret-Token", "s3cret-Token")
    assert not token_ok("s3cret-token", "s3cret-Token")
    assert not token_ok("", "s3cret-Token")
    assert not token_ok(None, "s3cret-Token")
    assert not token_ok("", "")
