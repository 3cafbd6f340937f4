"""The contract of a synchronization scheme: when workers compute and
synchronize, what they send, and how a root folds in what arrives.

A scheme is a subclass of `SyncScheme` named in topo.yaml as
`experiment.sync` (a built-in name, an entry point of the group
`geo_testbed.sync`, or `module:Class`), with its options under
`experiment.sync_options`.  Every agent builds its own instance from the
same options, so a scheme keeps no state across agents.

Hooks, and who calls them:

- `work(ctx)` (required), on every worker: the training loop.  `ctx` is
  the worker's `WorkerContext` (agents/roles/worker.py):
    ctx.options          this scheme's options, defaults filled in
    ctx.initial          the initial model as one flat float32 vector
    ctx.max_rounds       how many synchronizations to run at most
    ctx.want_stop        True once rank 0 reached the target accuracy
    ctx.gradient()       (flat gradient, loss, seconds) at the current model
    ctx.set_model(flat)  load a flat model into the trainer
    ctx.data_share()     this worker's share of all training samples
    ctx.data_plane(side) the overlay's data plane: `.iteration(it, vector,
                         stop)` all-reduces one vector through the roots'
                         rule; `side` takes messages of other types
    ctx.endpoint()       a bare transport endpoint, for a scheme that talks
                         to the roots itself
    ctx.layout()         who runs where, for such a scheme
    ctx.started(), ctx.record(...), ctx.synchronize(...), ctx.evaluate(...),
    ctx.finish(rounds, model)   the records every run's report reads
- `rule(model)`, at a piece's root on the data plane: an object whose
  `fold(start, stop, total, count)` returns the new values of that element
  range from the sum of `count` contributions.  `model` is the initial
  model (agents.workload.FlatModel): its values, how many of them are
  trained (the rest are buffers, such as BatchNorm's running statistics,
  which travel with the model) and the experiment's workload settings (its
  optimizer among them).  Default: the mean of what arrived.
- `serve(ctx)`, on every server: by default the data plane's server loop
  (`ctx.aggregate()`), where the overlay's plan makes a server a root or a
  relay; a scheme that does not aggregate in trees brings its own.
- `service(workers)`, in the coordinator: a `CoordinatorService` that
  answers this scheme's own message types (ESync's state server), or None.

`NEEDS` says what the scheme requires of the overlay it runs over (see
`agents.plugins.CAPABILITIES`); the validator refuses an overlay that does
not provide it, in one sentence.
"""

import abc

import numpy as np

from agents.plugins import settings


class SyncScheme(abc.ABC):
    NAME = ""
    DESCRIPTION = ""
    OPTIONS = ()                          # (agents.plugins.Option, ...)
    NEEDS = frozenset({"trees"})

    def __init__(self, options=None):
        self.options = settings(self.OPTIONS, options)

    @abc.abstractmethod
    def work(self, ctx):
        """The worker's side: compute and synchronize until done."""

    def rule(self, model):
        """The root's side over the data plane (see the module docstring)."""
        return Mean(model.values)

    def serve(self, ctx):
        """The server's side; by default the data plane's."""
        return ctx.aggregate()

    def service(self, workers):
        """A CoordinatorService for this scheme's messages, or None."""
        return None


class Mean:
    """New values: the mean of what arrived (model averaging)."""

    def __init__(self, initial):
        self.params = np.array(initial, dtype=np.float32)

    def fold(self, start, stop, total, count):
        self.params[start:stop] = total / np.float32(count)
        return self.params[start:stop].copy()
