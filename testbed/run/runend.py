"""How a run ended: which stop fired, whether the target accuracy was
reached, and the status that follows.  Pure: the runner says what it saw
and what the agents logged; this decides what to call it."""

from dataclasses import dataclass

from testbed.spec.units import plural

# What the runner saw end the run.
WORKERS_FINISHED = "workers-finished"   # every worker left its loop and exited 0
TIME = "time"                           # the experiment's time limit passed
AGENT_FAILURE = "agent-failure"         # an agent died or exited with an error
EMULATION_FAILURE = "emulation-failure"  # a delay line, a node's shell or the link sampler died
INTERRUPTED = "interrupted"             # Ctrl-C
ERROR = "error"                         # the runner itself went wrong

# stopped_by values, beyond the last four above.
TARGET = "target_accuracy"
ITERATIONS = "iterations"


@dataclass(frozen=True)
class RunEnd:
    status: str             # completed | failed
    stopped_by: str         # target_accuracy | iterations | time | agent-failure |
    #                         emulation-failure | interrupted | error
    target_reached: object  # True | False, None when the run has no target
    reason: str             # one sentence (an agent failure adds the end of its log)


def target_reached(accuracies, target):
    """None without a target; otherwise whether any evaluation reached it."""
    if not target:
        return None
    return any(a >= target for a in accuracies)


def _target_clause(reached, accuracies, target):
    if reached is None:
        return ""
    best = f" (best {max(accuracies):.3f})" if accuracies else " (never evaluated)"
    return f"; target accuracy {target:.3f} {'reached' if reached else 'not reached'}{best}"


def conclude(seen, detail="", accuracies=(), target=None, iterations=0, max_iterations=None,
             max_time=None):
    """The RunEnd of a run that ended by `seen` (one of the constants
    above; `detail` says more for failures).  accuracies: every test
    accuracy the workers logged; iterations: how many the furthest worker
    finished."""
    reached = target_reached(accuracies, target)
    clause = _target_clause(reached, accuracies, target)
    if seen == WORKERS_FINISHED:
        # Workers end on their own only at the target (which a rank-0
        # evaluation announced) or after their last iteration.
        if reached:
            return RunEnd("completed", TARGET, True,
                          f"the workers stopped at the target accuracy after {plural(iterations, 'iteration')}"
                          + clause)
        if max_iterations is not None and iterations >= max_iterations:
            return RunEnd("completed", ITERATIONS, reached,
                          f"the workers ran all {plural(max_iterations, 'iteration')}" + clause)
        return RunEnd("failed", AGENT_FAILURE, reached,
                      f"the workers stopped after {iterations} of {max_iterations} iterations "
                      f"with neither stop reached" + clause)
    if seen == TIME:
        limit = f" of {max_time:g}s" if max_time is not None else ""
        if iterations == 0:
            # Nothing was measured: a sweep must not take it as done.
            return RunEnd("failed", TIME, reached,
                          f"the time limit{limit} ended the run before any iteration finished"
                          + clause)
        return RunEnd("completed", TIME, reached,
                      f"the time limit{limit} ended the run after {plural(iterations, 'iteration')}" + clause)
    if seen in (AGENT_FAILURE, EMULATION_FAILURE, INTERRUPTED, ERROR):
        return RunEnd("failed", seen, reached, detail or seen)
    raise ValueError(f"unknown end of a run: {seen!r}")
