import os
import subprocess
import sys

TOPO = os.path.join(os.path.dirname(__file__), "..", "..", "topologies", "quickstart.yaml")


def run_testbed(*args, env=None):
    return subprocess.run([sys.executable, "-m", "testbed.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=60)


def test_validate_shows_the_links_of_a_good_file():
    r = run_testbed("validate", TOPO)
    assert r.returncode == 0, r.stderr
    assert "virginia -> tokyo" in r.stdout and "valid" in r.stdout


def test_a_bad_file_is_one_line_on_stderr_and_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datacenters: [{name: a, workers: 1}, {name: b}]\n"
                   "wan: [{between: [a, b], bw: 50 mbps}]\n")
    r = run_testbed("validate", str(bad))
    assert r.returncode == 2
    assert r.stderr == f"error: {bad}: wan[0].bw: '50 mbps' is not a rate like 50mbit\n"
    assert "Traceback" not in r.stdout + r.stderr


def test_net_with_a_bad_file_touches_no_state(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datacenters: [{name: 'a;rm -rf /'}]\n")
    r = run_testbed("net", str(bad), env={"TESTBED_STATE_DIR": str(tmp_path / "state")})
    assert r.returncode == 2
    assert "datacenters[0].name" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "state").exists()


def test_a_missing_file_is_a_sentence_not_a_traceback(tmp_path):
    r = run_testbed("validate", str(tmp_path / "none.yaml"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "no such file" in r.stderr


def test_an_unknown_delay_backend_is_refused_by_the_parser():
    r = run_testbed("net", TOPO, "--delay-backend", "magic")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_report_and_compare_refuse_a_folder_that_is_not_a_run(tmp_path):
    for args in (("report", str(tmp_path)), ("compare", str(tmp_path), str(tmp_path))):
        r = run_testbed(*args)
        assert r.returncode == 2 and r.stderr == f"error: {tmp_path} is not a run folder " \
                                                 "(it has no status.json and agents/)\n"


def test_an_unknown_recipe_is_named_with_the_known_ones():
    r = run_testbed("reproduce", "no-such-figure")
    assert r.returncode == 2 and "no recipe 'no-such-figure' (recipes: " in r.stderr
    assert "ps-scaling" in r.stderr.split("(recipes: ")[1]


def test_mnist_from_a_folder_without_its_files_is_refused_by_validate_in_one_sentence(tmp_path):
    empty = tmp_path / "mnist"
    empty.mkdir()
    topo = tmp_path / "topo.yaml"
    topo.write_text(open(TOPO).read().replace("  dataset: digits\n",
                                              f"  dataset: mnist\n  data_dir: {empty}\n"))
    r = run_testbed("validate", str(topo))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr == (f"error: {topo}: experiment.data_dir: {empty} holds no MNIST train-images-idx3-ubyte, "
                        "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (nor .gz): "
                        "put MNIST's four idx files there (nothing is downloaded)\n")
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"):
        (empty / stem).write_bytes(b"")
    (empty / "t10k-labels-idx1-ubyte.gz").write_bytes(b"")
    assert run_testbed("validate", str(topo)).returncode == 0


def test_validate_counts_in_words_that_agree_with_the_count(tmp_path):
    topo = tmp_path / "topo.yaml"
    topo.write_text("datacenters: [{name: a, servers: 1, workers: 1}, {name: b, workers: 2}]\n"
                    "wan: [{between: [a, b], bw: 10mbit}]\n"
                    "dynamics: [{at: 5s, link: [a, b], bw: 5mbit}]\n")
    r = run_testbed("validate", str(topo))
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "2 data centers: a (1 server, 1 worker), b (0 servers, 2 workers)" in text
    assert "dynamics: 1 scheduled change" in text
