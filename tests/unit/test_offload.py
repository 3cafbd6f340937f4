import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from agents.planning import offload


def _gone(pid, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_call_runs_in_another_process_and_returns_its_value():
    solver = offload.Solver()
    try:
        call = solver.call(os.getpid)
        call.join()
        assert not call.is_alive()
        assert call.result() == solver.proc.pid != os.getpid()
        # The child stays for the next call.
        assert solver.call(math.hypot, 3.0, 4.0).result() == 5.0
    finally:
        solver.close()


def test_a_call_under_way_is_alive_until_its_result_comes_and_a_second_one_is_refused():
    solver = offload.Solver()
    try:
        call = solver.call(time.sleep, 0.5)
        assert call.is_alive()
        with pytest.raises(RuntimeError, match="busy"):
            solver.call(os.getpid)
        deadline = time.monotonic() + 10
        while call.is_alive() and time.monotonic() < deadline:     # as the coordinator's tick asks
            time.sleep(0.02)
        assert not call.is_alive() and call.result() is None
        assert solver.call(os.getpid).result() == solver.proc.pid
    finally:
        solver.close()


def test_an_error_in_the_child_is_raised_where_the_result_is_asked_for():
    solver = offload.Solver()
    try:
        with pytest.raises(RuntimeError, match="ValueError: math domain error"):
            solver.call(math.sqrt, -1.0).result()
        assert solver.call(math.sqrt, 4.0).result() == 2.0
    finally:
        solver.close()


def test_a_call_past_the_limit_ends_the_child_and_fails_so_a_hung_solve_ends_the_run():
    solver = offload.Solver(limit=1.0)
    try:
        call = solver.call(time.sleep, 60)
        child = solver.proc.pid
        deadline = time.monotonic() + 10
        while call.is_alive() and time.monotonic() < deadline:     # as the coordinator's tick asks
            time.sleep(0.05)
        assert not call.is_alive() and _gone(child)
        with pytest.raises(RuntimeError, match="no result after 1s; the solver process was ended"):
            call.result()
        # join() holds to the same limit; the next call gets a new child.
        with pytest.raises(RuntimeError, match="no result after 1s"):
            solver.call(time.sleep, 60).result()
        assert solver.call(math.sqrt, 9.0).result() == 3.0
    finally:
        solver.close()


def test_close_ends_the_child_even_mid_call():
    solver = offload.Solver()
    solver.call(time.sleep, 30)
    pid = solver.proc.pid
    solver.close()
    assert _gone(pid) and solver.proc is None


def test_the_child_dies_with_a_parent_killed_outright():
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time
        from agents.planning import offload
        solver = offload.Solver()
        solver.call(time.sleep, 0).result()      # the child is up and serving
        solver.call(time.sleep, 60)
        print(solver.proc.pid, flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=offload.ROOT))
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    parent.stdout.close()
    assert _gone(child)
