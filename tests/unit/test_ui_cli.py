import os

from tests.unit.test_cli import TOPO, run_testbed


def test_validate_draws_the_topology_into_a_png(tmp_path):
    out = tmp_path / "topo.png"
    r = run_testbed("validate", TOPO, "--draw", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_picture_in_a_missing_folder_is_one_sentence_and_exit_2(tmp_path):
    out = tmp_path / "none" / "topo.png"
    r = run_testbed("validate", TOPO, "--draw", str(out))
    assert r.returncode == 2
    assert r.stderr == f"error: --draw {out}: the folder {out.parent} does not exist\n"
    assert not os.path.exists(out.parent)


def test_a_picture_that_is_no_picture_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "topo.txt"
    r = run_testbed("validate", TOPO, "--draw", str(out))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "ending in .png, .svg, .pdf" in r.stderr and not out.exists()
    assert "valid" not in r.stdout


def test_a_taken_ui_port_is_one_sentence_and_exit_2_before_any_run_folder(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = run_testbed("run", TOPO, "--runs", str(tmp_path / "runs"), "--ui", "--ui-port", str(port))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"error: --ui-port {port}: cannot listen on 127.0.0.1:{port}")
    assert not (tmp_path / "runs").exists()
