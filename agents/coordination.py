"""What runs inside the experiment's coordinator: an overlay's policy and a
sync scheme's service share one contract.

The coordinator (agents/roles/coordinator.py) owns the socket.  It hands
each message to the service whose `TYPES` name its type (a sync scheme's,
like ESync's state server) or else to the overlay's policy, sends the
replies, and logs the decisions.  Every half second it gives the policy
the network's view and lets it act on its own clock.
"""


class CoordinatorService:
    """One part of the coordinator.  Every hook but `on_message` has a
    default that does nothing."""

    # The message types this service answers; () for an overlay's policy,
    # which takes every message no service claims.
    TYPES = ()

    def on_message(self, sender, header):
        """A request from agent `sender`: ([(agent, reply header)], [decision
        dict]).  Decisions are logged as `decision` events."""
        raise NotImplementedError(f"{type(self).__name__} answers no message")

    def take_estimates(self, estimates):
        """The probes' settled estimates, {"a->b": bit/s}, every half second."""

    def take_probes(self, probes):
        """The probes' own numbers per DC pair, {"a->b": {"active": bit/s of
        the last trains' estimate, "last": bit/s of the last train, "rtt":
        seconds, "readings": trains in the estimate}}, every half second."""

    def tick(self):
        """Called after every message and read of the view: [decision] from
        acting on its own clock (a re-plan)."""
        return []

    def close(self):
        """The experiment is over: stop what the service started."""
