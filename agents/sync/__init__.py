"""Synchronization schemes: when workers compute and synchronize, what they
send, and how a root folds in what arrives.  One module per scheme, each
with:

  NAME, DESCRIPTION
  OVERLAYS         the overlays it runs over
  OPTIONS, RANGES  its parameters with defaults, and the values each may take
                   (a (low, high) pair for a number, a tuple of names for a word)
  work(ctx)        the worker side, given a WorkerContext (agents.roles.worker)
  Rule(initial, workload, options)
                   the root side over the data plane: fold(start, stop, total,
                   count) -> the new values of that element range
  serve(cfg, log, options)
                   instead of Rule, for a scheme that does not aggregate in the
                   data plane's trees: the server side of its own
  StateService     optional: a service the coordinator runs for the scheme
                   (TYPES, on_message(sender, header) -> (replies, decisions))
"""

from agents.sync import esync, fedasync, fedavg, nbsync, ssgd

SCHEMES = {m.NAME: m for m in (ssgd, fedavg, fedasync, esync, nbsync)}


def settings(scheme, raw=None):
    """A scheme's parameters: its defaults, overridden by what the experiment set."""
    return {**scheme.OPTIONS, **(raw or {})}
