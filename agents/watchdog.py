"""A loop that stops coming round ends its process, so the runner sees it.

A coordinator or scheduler is a service loop that wakes at least every
fraction of a second; its heartbeats come from a thread of their own, so
peers would take a hung loop for a live one and wait on it for ever.  The
loop calls beat() every round; if no beat comes for `limit` seconds,
faulthandler writes every thread's stack to stderr (the agent's log) and
the process exits with code 1.  faulthandler's timer is a C thread that
needs no GIL, so a loop stuck in C code holding it is caught too.
"""

import faulthandler
import sys
import time

# How long a service loop may take for one round before it is taken for hung:
# far beyond a re-plan of the largest WAN the testbed holds.
LOOP_LIMIT = 60.0
# Re-arming starts a timer thread, so a beat re-arms at most this often (or
# a quarter of the limit), and the timer is set that much longer than the
# limit: it never fires sooner than `limit` after the last beat.
REARM_EVERY = 1.0


class LoopWatchdog:
    def __init__(self, what, limit=LOOP_LIMIT, stream=None):
        self.what = what
        self.limit = limit
        self.stream = stream or sys.stderr
        self.rearm = min(REARM_EVERY, limit / 4)
        self.armed_at = None

    def beat(self):
        now = time.monotonic()
        if self.armed_at is None or now - self.armed_at >= self.rearm:
            if self.armed_at is None:
                self.stream.write(f"watchdog: the {self.what} loop ends this process if a round "
                                  f"takes over {self.limit:g}s\n")
                self.stream.flush()
            faulthandler.dump_traceback_later(self.limit + self.rearm, exit=True, file=self.stream)
            self.armed_at = now

    def stop(self):
        faulthandler.cancel_dump_traceback_later()
        self.armed_at = None
