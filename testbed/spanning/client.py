"""The driver's connection to one machine's node server
(testbed.spanning.node): one JSON request and reply at a time over
ZeroMQ, and that machine's clock against the driver's."""

import json
import threading
import time

from testbed.emulation.network import NetworkError

RPC_TIMEOUT = 30.0          # seconds a request may take before its machine counts as lost
CLOCK_ROUNDS = 16


class MachineLost(NetworkError):
    """A machine stopped answering; the text names it."""


class Machine:
    """The driver's connection to one machine's node server."""

    def __init__(self, name, address, port, ctx=None):
        import zmq
        self.zmq = zmq
        self.name, self.address, self.port = name, address, port
        self.ctx = ctx or zmq.Context.instance()
        self.lock = threading.Lock()
        self.sock = None
        self.lost = None

    def _socket(self):
        if self.sock is None:
            self.sock = self.ctx.socket(self.zmq.REQ)
            self.sock.setsockopt(self.zmq.LINGER, 0)
            self.sock.connect(f"tcp://{self.address}:{self.port}")
        return self.sock

    def call(self, op, timeout=RPC_TIMEOUT, **args):
        with self.lock:
            if self.lost:
                raise MachineLost(self.lost)
            sock = self._socket()
            sock.send(json.dumps({"op": op, **args}).encode())
            if not sock.poll(int(timeout * 1000)):
                sock.close()
                self.sock = None
                self.lost = f"machine {self.name} ({self.address}) did not answer `{op}` " \
                            f"within {timeout:g} s"
                raise MachineLost(self.lost)
            reply = json.loads(sock.recv())
        if not reply["ok"]:
            raise NetworkError(f"machine {self.name}: {reply['error']}")
        return reply["value"]

    def offset(self, rounds=CLOCK_ROUNDS):
        """(offset, uncertainty): this machine's CLOCK_MONOTONIC minus the
        driver's, from the exchange of least round trip; within the
        uncertainty (half that round trip)."""
        best = None
        for _ in range(rounds):
            t0 = time.monotonic()
            remote = self.call("clock")
            t1 = time.monotonic()
            if best is None or t1 - t0 < best[1]:
                best = (remote - (t0 + t1) / 2, t1 - t0)
        return best[0], best[1] / 2

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None
