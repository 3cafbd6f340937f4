"""Telling a dead peer from a slow one: every endpoint beats to every peer
from a thread and sockets of its own (a beat must not wait behind a large
tensor on the data socket), and a watched peer silent past `dead_after`,
beats included, is dead."""

import threading

import zmq

HEARTBEAT_SUFFIX = "#hb"
# The IP TOS byte of the heartbeats' connections (DSCP CS6, network
# control): the emulated WAN gives such frames a class and a queue of
# their own (testbed/emulation/shaping.py), and a host that accepts such
# a connection answers in kind (tcp_reflect_tos).
LIVENESS_TOS = 0xC0


class PeerDead(RuntimeError):
    """A peer stopped talking (no data and no heartbeat for `dead_after`)."""

    def __init__(self, peer, silent_for):
        self.peer = peer
        super().__init__(f"peer {peer} has been silent for {silent_for:.1f}s: presumed dead")


class Heartbeats:
    """A thread that sends an empty frame to every peer every `interval`
    seconds, through DEALER sockets named `name#hb` marked LIVENESS_TOS,
    until stopped.  make_socket(identity, host, port, ctx, tos) makes one."""

    def __init__(self, name, peers, interval, make_socket):
        self.ctx = zmq.Context(1)      # its own: beats go on while data waits to leave
        self.stopping = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(name + HEARTBEAT_SUFFIX, dict(peers), interval, make_socket),
            daemon=True)
        self.thread.start()

    def _run(self, identity, peers, interval, make_socket):
        # ZeroMQ sockets belong to one thread: made and closed here.
        socks = {p: make_socket(identity, h, port, self.ctx, tos=LIVENESS_TOS)
                 for p, (h, port) in peers.items()}
        try:
            while not self.stopping.wait(interval):
                for s in socks.values():
                    try:
                        s.send(b"", zmq.NOBLOCK)
                    except zmq.Again:
                        pass
        finally:
            for s in socks.values():
                s.close(0)

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=2)
        self.ctx.term()


def heartbeat_of(sender):
    """The peer a heartbeat frame's sender identity names, or None for data."""
    return sender[:-len(HEARTBEAT_SUFFIX)] if sender.endswith(HEARTBEAT_SUFFIX) else None


def check_alive(watch, last_seen, started, dead_after, first_contact_grace, now):
    """Raise PeerDead for the first watched peer silent too long: past
    `dead_after` since it was last heard, or, never heard from, past
    `first_contact_grace` since `started` (it may still be starting)."""
    for peer in watch:
        seen = last_seen.get(peer)
        silent = now - (seen if seen is not None else started)
        limit = dead_after if seen is not None else first_contact_grace
        if silent > limit:
            raise PeerDead(peer, silent)
