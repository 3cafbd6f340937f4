"""The bandwidth matrix as the probes publish it (ZeroMQ PUB/SUB).

Each probe publishes, for its own DC as the destination, the estimate of
every direction src -> dst; a subscriber keeps the latest of each.
"""

import json

import zmq

TOPIC = b"bw"


def publish(sock, dst, t, rows):
    sock.send_multipart([TOPIC, json.dumps({"dst": dst, "t": t, "rows": rows}).encode()])


class MatrixSubscriber:
    def __init__(self, endpoints, ctx=None):
        self.ctx = ctx or zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, TOPIC)
        self.sock.setsockopt(zmq.LINGER, 0)
        for host, port in endpoints:
            self.sock.connect(f"tcp://{host}:{port}")
        self.matrix = {}     # (src, dst) -> estimate dict

    def poll(self, timeout=0.0):
        """Take every message waiting (up to `timeout` seconds for the first)."""
        got = 0
        while self.sock.poll(int(timeout * 1000) if got == 0 else 0):
            _, body = self.sock.recv_multipart()
            msg = json.loads(body)
            for src, est in msg["rows"].items():
                self.matrix[(src, msg["dst"])] = est
            got += 1
        return got

    def estimate(self, src, dst):
        """The latest estimate of src -> dst, or None."""
        return self.matrix.get((src, dst))

    def close(self):
        self.sock.close(0)
