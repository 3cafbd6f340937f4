"""Live speed changes reach the workers whole and in order, from any
number of threads at once, however close together they come."""

import os
import threading

from agents.events import read_events
from agents.roles.worker import SpeedFile
from testbed.records.runfolder import RunFolder
from testbed.run.runner import SpeedSetter


def test_speed_changes_from_two_threads_land_whole_and_end_on_the_last_one_stamped(tmp_path):
    os.makedirs(tmp_path / "agents")
    folder = RunFolder(str(tmp_path))
    setter = SpeedSetter(folder)
    reader = SpeedFile(folder.agent_file("east-w0", "speed"))
    errors, seen = [], []

    def writer(first):
        try:
            for k in range(300):
                setter.set(["east-w0"], first + k * 1e-3, "console" if first < 2 else "dynamics")
        except Exception as e:  # noqa: BLE001 - what the test reports
            errors.append(e)
    threads = [threading.Thread(target=writer, args=(first,)) for first in (1.0, 3.0)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        speed = reader.changed()
        if speed is not None:
            seen.append(speed)
    for t in threads:
        t.join()
    assert errors == []
    stamped = [e["speed"] for e in read_events(folder.file("speeds.jsonl"))]
    assert len(stamped) == 600 and set(seen) <= set(stamped)
    last = reader.changed()
    with open(folder.agent_file("east-w0", "speed")) as f:
        assert float(f.read()) == stamped[-1] == (last if last is not None else seen[-1])
    assert not [n for n in os.listdir(folder.agents) if n.endswith(".tmp")]


def test_a_speed_file_read_half_written_is_read_again_once_whole(tmp_path):
    path = tmp_path / "east-w0.speed"
    path.write_text("")                 # truncated, its number not yet written
    mtime = os.stat(path).st_mtime_ns
    reader = SpeedFile(str(path))
    assert reader.changed() is None
    # The rest of the write lands within the same tick of the file system's clock.
    with open(path, "w") as f:
        f.write("0.25\n")
    os.utime(path, ns=(mtime, mtime))
    assert reader.changed() == 0.25
    assert reader.changed() is None     # and once only
