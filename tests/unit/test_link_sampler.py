"""The link sampler's own failure is the run's: it stops with a sentence
the runner ends the run with, instead of dying silently in its thread."""

import time
import types

from testbed.run.linksampler import LinkSampler


def test_a_sampler_that_cannot_write_its_samples_says_so_and_stops(tmp_path):
    where = tmp_path / "link_samples.jsonl"
    where.mkdir()                     # a folder where the samples file belongs
    sampler = LinkSampler(types.SimpleNamespace(current={}), str(where), interval=0.05).start()
    try:
        deadline = time.monotonic() + 10
        while sampler.failure() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sampler.failure().startswith("the link sampler stopped: IsADirectoryError: ")
        assert not sampler._thread.is_alive()
    finally:
        sampler.stop()


def test_a_sampler_that_works_has_no_failure(tmp_path):
    sampler = LinkSampler(types.SimpleNamespace(current={}), str(tmp_path / "s.jsonl"),
                          interval=0.05).start()
    try:
        time.sleep(0.3)
        assert sampler.failure() is None and sampler._thread.is_alive()
    finally:
        sampler.stop()
