import subprocess

import pytest

from tests.mininet.helpers import ROOT, cli_argv


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
