"""However early a Ctrl-C comes, a run's folder never stays `running`, and
the report after it can be interrupted: it runs with Ctrl-C live."""

import json
import os
import signal

import pytest

from testbed.emulation import capability
from testbed.run import runner
from tests.mininet.helpers import topology


@pytest.fixture
def spec():
    try:
        capability.require_network_capabilities()
    except capability.CapabilityError as e:
        pytest.skip(f"runs need what networks need: {e}")
    return topology("quickstart")


@pytest.fixture
def ctrl_c_live():
    """Ctrl-C raising KeyboardInterrupt, as in a terminal, whatever this
    process inherited (a job started in the background ignores SIGINT)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def status_of(folder):
    with open(folder.file("status.json")) as f:
        return json.load(f)


def test_a_ctrl_c_as_soon_as_the_folder_exists_closes_it_as_interrupted(tmp_path, spec, monkeypatch,
                                                                      ctrl_c_live):
    folders, said, disposition = [], [], []

    def interrupted_at_once(folder):
        folders.append(folder)
        raise KeyboardInterrupt

    def slow_report(path):
        # What Ctrl-C does while the plots are drawn: it is live, and it stops them.
        disposition.append(signal.getsignal(signal.SIGINT))
        raise KeyboardInterrupt
    monkeypatch.setattr(runner.report, "report", slow_report)
    try:
        outcome = runner.run(spec, str(tmp_path), on_folder=interrupted_at_once, say=said.append)
    except KeyboardInterrupt:
        pytest.fail(f"the Ctrl-C left the run with its folder {status_of(folders[0])['status']}")
    (folder,) = folders
    assert (outcome.status, outcome.stopped_by) == ("failed", "interrupted")
    assert status_of(folder)["status"] == "failed" and os.listdir(tmp_path) == [os.path.basename(folder.path)]
    assert disposition == [signal.default_int_handler]
    assert said[-1] == f"the report was interrupted; `testbed report {folder.path}` writes it"
