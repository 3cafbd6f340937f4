import pathlib
import subprocess

import pytest

from tests.mininet.helpers import ROOT, cli_argv

HERE = pathlib.Path(__file__).parent

# The test files that take longest, longest first.  `make test` hands whole
# files to its processes in the order they were collected (--dist loadfile
# --no-loadscope-reorder: xdist would order them by their number of tests),
# so with these first the last file to end is a short one and the processes
# finish together.  Only the order changes: a file not named runs after these.
LONGEST_FIRST = ("test_living_wan.py", "test_cluster_sweep.py", "test_spanning.py", "test_sync_schemes.py",
                 "test_flower.py",
                 "test_probe_scale.py", "test_wan_links.py", "test_programs.py")


def pytest_collection_modifyitems(items):
    """Puts this folder's longest files first, where its tests were."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    places = [i for i, item in enumerate(items) if item.path.parent == HERE]
    ordered = sorted((items[i] for i in places), key=lambda item: rank.get(item.path.name, len(rank)))
    for i, item in zip(places, ordered):
        items[i] = item


@pytest.fixture(scope="session")
def ps_scaling_quick(tmp_path_factory):
    """`testbed reproduce ps-scaling --quick`, run once for every test that
    reads it: the folder holding its `runs` and its `out`."""
    where = tmp_path_factory.mktemp("ps-scaling-quick")
    r = subprocess.run(cli_argv("reproduce", "ps-scaling", "--quick", "--runs", str(where / "runs"),
                                "--out", str(where / "out")),
                       capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return where
