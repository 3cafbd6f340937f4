"""The contract of an executor node: one agent's part in every iteration,
as a state machine that takes messages and returns messages to send.  The
data plane's loop (`driver.DataPlane`) is the only place where a node
meets sockets, so a test can deliver its messages in any order.

`TreeNode` (agents/dataplane/tree.py) carries out a fixed Plan; dynamic
overlays bring nodes of their own.  The first six hooks are required;
the rest have defaults that do nothing, and the data plane looks up once
which ones a node overrides, so a hook left alone costs nothing per
message.
"""

import abc


class ExecutorNode(abc.ABC):
    # Wants a transport whose per-peer queues are visible (`route` reads them).
    QUEUED = False

    # ------------------------------------------------------------ required

    @abc.abstractmethod
    def start(self, it, contribution=None, stop=False, started=0.0):
        """Begin iteration `it` with this node's contribution (the flat
        vector, for a contributor), its wish to stop and the monotonic time
        it began: [(peer, header, payload)] to send."""

    @abc.abstractmethod
    def on_message(self, sender, header, payload):
        """A message from `sender`: [(peer, header, payload)] to send."""

    @abc.abstractmethod
    def done(self, it):
        """True once this node has played its whole part in iteration `it`."""

    @abc.abstractmethod
    def result(self, it):
        """(new model or None, stop, latest contributor's start) of a
        finished iteration; forgets it."""

    @abc.abstractmethod
    def upstream(self):
        """The agents whose silence would stall this node (watched for death)."""

    @abc.abstractmethod
    def roots(self):
        """Indices of the pieces this node folds in (for the records)."""

    # ------------------------------------------------------------ optional

    def piece_ranges(self):
        """[(start, stop)] of the pieces, for timing whole transfers; [] when
        they change between iterations (then `segments_of` says)."""
        return []

    def segments_of(self, piece):
        """Segments in one transfer of `piece`; None to count them from
        `piece_ranges`."""
        return None

    def take_rates(self):
        """{peer: bit/s (0: unpaced)} to pace connections to, set since the
        last call; called before every send."""
        return {}

    def route(self, dst, header, queue_length):
        """(next hop, header) of a message to `dst`; `queue_length(peer)`
        is the transport's backlog towards a peer (QUEUED nodes)."""
        return dst, header

    def flow_of(self, header):
        """(flow, weight): messages of different flows share a queued
        connection in proportion to their weights; None keeps their order."""
        return None, 1.0

    def traces_pieces(self):
        """True to log, per iteration, when each piece's segments arrived."""
        return False

    def trace_fields(self, it):
        """What a trace of iteration `it` adds (a plan's version)."""
        return {}

    def farewell(self):
        """Messages that tell others this node is done, for overlays whose
        messages may detour through other nodes."""
        return []

    def lingering(self):
        """The agents this node waits to hear `farewell` from before leaving."""
        return []

    def counts(self):
        """Numbers the node adds to its `done` event."""
        return {}


def overrides(node, hook):
    """Whether `node` brings its own `hook` rather than ExecutorNode's default."""
    return getattr(type(node), hook) is not getattr(ExecutorNode, hook)
