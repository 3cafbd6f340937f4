"""A service loop that stops coming round ends its process with every
thread's stack in its log, so the runner sees a failed agent instead of a
hung one that its heartbeats keep alive."""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOOP = textwrap.dedent("""
    import sys, threading, time
    from agents.watchdog import LoopWatchdog
    dog = LoopWatchdog("test", limit=1.0)
    # A heartbeat thread goes on meanwhile, as an agent's does.
    threading.Thread(target=lambda: [time.sleep(0.05) for _ in iter(int, 1)], daemon=True).start()
    for _ in range(25):               # 2.5 s of rounds of 0.1 s each
        dog.beat()
        time.sleep(0.1)
    def stuck_in_the_loop():
        while True:
            sum(range(10 ** 6))
    if sys.argv[1] == "hang":
        print("hung", flush=True)
        stuck_in_the_loop()
    dog.stop()
""")


def run_loop(how):
    return subprocess.run([sys.executable, "-c", LOOP, how], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_a_loop_that_stops_coming_round_ends_its_process_with_its_stack():
    r = run_loop("hang")
    assert r.returncode == 1 and r.stdout == "hung\n"
    assert "Timeout (0:00:01.25" in r.stderr and "stuck_in_the_loop" in r.stderr, r.stderr


def test_a_loop_whose_rounds_stay_under_the_limit_runs_as_long_as_it_likes():
    r = run_loop("finish")
    assert r.returncode == 0 and "Timeout" not in r.stderr, r.stderr
