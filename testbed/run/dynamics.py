"""Replays a living WAN's schedules (testbed/spec/dynamics.py) while a run
lives: each action at its time, through the one live-change function of
the network (and the speed setter), so every change is stamped where all
changes are."""

import threading
import time

from testbed.spec.dynamics import LinkAction


class Engine:
    """Fires actions at their times (seconds from `start`, monotonic) on a
    thread.  link(action) and speed(action) apply them; failures are
    reported through `report` and do not stop the engine."""

    def __init__(self, link, speed, report=lambda text: None):
        self.apply_link = link
        self.apply_speed = speed
        self.report = report
        self.start = None
        self._pending = []
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, daemon=True, name="dynamics")

    def run(self, schedules, horizon):
        self.start = time.monotonic()
        for s in schedules:
            self.add(s.actions(horizon))
        self._thread.start()
        return self

    def add(self, actions, offset=0.0):
        with self._cond:
            for a in actions:
                self._pending.append((a.t + offset, a))
            self._pending.sort(key=lambda x: x[0])
            self._cond.notify()

    def now(self):
        return time.monotonic() - self.start

    def _loop(self):
        while True:
            with self._cond:
                while not self._stop and (not self._pending or self._pending[0][0] > self.now()):
                    wait = self._pending[0][0] - self.now() if self._pending else None
                    self._cond.wait(timeout=wait)
                if self._stop:
                    return
                _, action = self._pending.pop(0)
            try:
                if isinstance(action, LinkAction):
                    self.apply_link(action)
                else:
                    self.apply_speed(action)
            except Exception as e:  # noqa: BLE001 - a failed change is reported, the run goes on
                self.report(f"dynamics: {action} failed: {e}")

    def stop(self):
        with self._cond:
            self._stop = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
