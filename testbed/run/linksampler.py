"""Samples every WAN direction once a second: the rate its shaper is set to
and the bytes it has sent, both as the kernel reports them (`tc -s class
show`), appended to the run folder's link_samples.jsonl.  The report turns
them into throughput.  With `cpu_path`, it also appends how busy the
machine's cores were over each interval (`testbed.records.cpu`): every
machine's, for a WAN that spans several."""

import json
import logging
import os
import threading
import time

from testbed.emulation.network import NetworkError
from testbed.records.cpu import CpuMeter

log = logging.getLogger(__name__)


class LinkSampler:
    def __init__(self, net, path, interval=1.0, cpu_path=None):
        self.net = net
        self.path = path
        self.cpu_path = cpu_path
        self.cpu = None           # started at the first sample, so every lap is a full interval
        self.interval = interval
        self.latest = {}          # (src, dst) -> bit/s over the last interval
        self._prev = {}
        self._error = None        # what ended the sampling early, for failure()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="link-sampler")

    def start(self):
        self._thread.start()
        return self

    def sample(self):
        now = time.monotonic()
        records = []
        for (src, dst), direction in list(self.net.current.items()):
            try:
                rate, sent = self.net.shaper_counters(src, dst)
            except NetworkError:
                continue  # the network is going down
            prev = self._prev.get((src, dst))
            if prev:
                self.latest[(src, dst)] = (sent - prev[1]) * 8 / max(1e-6, now - prev[0])
            self._prev[(src, dst)] = (now, sent)
            records.append({"t": now, "src": src, "dst": dst, "rate": rate, "up": direction.up,
                            "bytes": sent})
        with open(self.path, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        if not self.cpu_path:
            return
        if hasattr(self.net, "cpu_laps"):
            # A WAN over several machines: each machine's cores, each line naming it.
            laps = self.net.cpu_laps()
            with open(self.cpu_path, "a") as f:
                for machine, lap in laps.items():
                    if lap is not None:
                        f.write(json.dumps({"t": now, "machine": machine, **lap}) + "\n")
        elif self.cpu is None:
            self.cpu = CpuMeter()
        else:
            with open(self.cpu_path, "a") as f:
                f.write(json.dumps({"t": now, **self.cpu.lap(), "cores": os.cpu_count()}) + "\n")

    def _loop(self):
        try:
            while not self._stop.is_set():
                self.sample()
                self._stop.wait(self.interval)
        except Exception as e:  # noqa: BLE001 - the runner ends the run with it
            log.debug("the link sampler failed", exc_info=e)
            self._error = f"{type(e).__name__}: {e}"

    def failure(self):
        """Why the samples stopped, in one sentence, or None while they go on."""
        if self._error is not None:
            return f"the link sampler stopped: {self._error}"
        return None

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
