"""The package builds as a wheel and runs installed from it, not from the
source tree: `testbed --version`, and the files it reads besides its code
(the AWS presets, the live page's static files, the delay line's C source)
come with it."""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = ["testbed/spec/presets/aws-regions.csv", "testbed/ui/static/page.html", "testbed/ui/static/ui.js",
        "testbed/ui/static/ui.css", "testbed/emulation/delayline.c"]


def run(*args, **kw):
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtualenv with the wheel installed and nothing else of the
    project's: the dependencies come from this virtualenv's site-packages,
    added after the wheel's own, so `testbed` is imported from the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"         # a copy: building writes build/ and *.egg-info beside setup.py
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "results", "tests", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis"))
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp),
        str(source))
    wheel = next(tmp.glob("geo_testbed-*.whl"))
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    python = str(venv / "bin" / "python")
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", str(wheel))
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    with open(os.path.join(site, "deps-from-the-project-venv.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    return venv, site, wheel


def test_the_wheel_s_testbed_prints_its_version(installed):
    venv, _, wheel = installed
    out = run(str(venv / "bin" / "testbed"), "--version", cwd="/").stdout
    version = wheel.name.split("-")[1]
    assert out.strip() == f"testbed, version {version}"


def test_the_wheel_carries_the_files_the_code_reads_and_runs_from_its_own_copy(installed, tmp_path):
    venv, site, _ = installed
    for rel in DATA:
        assert os.path.isfile(os.path.join(site, rel)), rel
    where = run(str(venv / "bin" / "python"), "-c", "import testbed; print(testbed.__file__)", cwd="/").stdout
    assert where.startswith(site)
    topo = tmp_path / "aws.yaml"        # a preset link: the presets' CSV is read from the wheel
    topo.write_text("datacenters: [{name: virginia, workers: 1, servers: 1}, {name: tokyo, workers: 1}]\n"
                    "wan: [{preset: aws/Virginia-Tokyo}]\nexperiment: {workload: synthetic}\n")
    out = run(str(venv / "bin" / "testbed"), "validate", str(topo), cwd=str(tmp_path)).stdout
    assert "valid" in out and "virginia" in out
