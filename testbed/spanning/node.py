"""`python -m testbed.spanning.node`: one machine's part of a WAN that spans
machines.  It builds its share of the network with the same builder as a
one-machine run (testbed.emulation.network.build with a Share), starts
processes in its emulated hosts, applies link changes to the directions it
shapes and the delay lines it runs, reads its shapers' counters, and
hands back the files its processes wrote.  The driver talks to it over
ZeroMQ (REQ/REP, one JSON object each way) on the machine's control
address; it serves one run, and tears it down when told to stop, when the
driver has not been heard from for DRIVER_SILENCE seconds, when the
process that started it (the machine's Ray actor, which dies with the
driver) is gone, or on SIGTERM.

It runs as root with the machine's own state folder, so `testbed clean` on
that machine removes what a killed one left.
"""

import argparse
import base64
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time

DRIVER_SILENCE = 60.0      # seconds without a request before the part tears itself down
READY = "ready"


class Process:
    """A process in an emulated host, its output kept or sent to a file."""

    def __init__(self, popen, log=None):
        self.popen = popen
        self.out, self.err = [], []
        self.readers = []
        if log is None:
            for stream, into in ((popen.stdout, self.out), (popen.stderr, self.err)):
                if stream is not None:
                    t = threading.Thread(target=lambda s=stream, i=into: i.append(s.read()),
                                         daemon=True)
                    t.start()
                    self.readers.append(t)

    def output(self):
        for t in self.readers:
            t.join(timeout=5)
        return b"".join(self.out), b"".join(self.err)


class Part:
    """The requests one machine answers; each returns a JSON-able value or
    raises, and the error's text goes back to the driver."""

    def __init__(self, machine):
        self.machine = machine
        self.share = None
        self.net = None
        self.procs = {}
        self.cpu = None

    # ------------------------------------------------------------ clocks and files

    def hello(self):
        return {"machine": self.machine, "host": socket.gethostname(), "pid": os.getpid(),
                "cores": os.cpu_count(), "python": sys.executable, "t": time.monotonic()}

    def clock(self):
        return time.monotonic()

    def put(self, files):
        for path, data in files.items():
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(base64.b64decode(data))

    def collect(self, root):
        """The files under root as a gzipped tar."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for folder, _, names in os.walk(root):
                for name in names:
                    path = os.path.join(folder, name)
                    tar.add(path, arcname=os.path.relpath(path, root))
        return base64.b64encode(buf.getvalue()).decode()

    def exists(self, path):
        return os.path.exists(path)

    # ------------------------------------------------------------ the network

    def build(self, text, overrides, source, name, digest, share, delay_backend, run_dir):
        """This machine's share of the WAN of the topology `text` with the
        --set `overrides`, read here exactly as the driver read it (its
        digest says so), or refused."""
        from testbed.emulation import network
        from testbed.emulation.share import Share, lagged_spec
        from testbed.spanning.network import spec_digest
        from testbed.spec.overrides import apply, assignment
        from testbed.spec.topology import from_document, parse_text
        doc = apply(parse_text(text), [assignment(o) for o in overrides])
        spec = from_document(doc, source=source, default_name=name)
        if spec_digest(spec) != digest:
            raise ValueError("this machine reads the topology differently from the driver: "
                             "install the same testbed on every machine")
        self.share = Share.from_dict(share)
        spec = lagged_spec(spec, self.share)
        if run_dir:
            os.makedirs(run_dir, exist_ok=True)
        self.net = network.build(spec, delay_backend=delay_backend, run_dir=run_dir,
                                 share=self.share)
        return {"run_id": self.net.state.run_id, "backend": self.net.backend.name,
                "description": self.net.backend.description,
                "uses_relays": self.net.backend.uses_relays}

    def change(self, a, b, both, changes, source):
        """A live change; a delay on a link that crosses the underlay is
        lagged as at the build, per direction (their jitters may differ)."""
        tunnel = self.share.tunnel(self.net.plan.link(a, b).index)
        if tunnel is None or changes.get("delay") is None:
            self.net.change_link(a, b, both=both, source=source, **changes)
            return
        for src, dst in [(a, b), (b, a)] if both else [(a, b)]:
            jitter = changes.get("jitter")
            jitter = self.net.current[(src, dst)].jitter if jitter is None else jitter
            delay = max(jitter, changes["delay"] - tunnel.lag)
            self.net.change_link(src, dst, both=False, source=source, **{**changes, "delay": delay})

    def underlay_rtt(self, address, count=20):
        """The mean round trip to another machine's underlay address, in seconds."""
        out = subprocess.run(["ping", "-n", "-q", "-c", str(count), "-i", "0.01", address],
                             capture_output=True, text=True).stdout
        m = re.search(r"= [\d.]+/([\d.]+)/", out)
        if not m:
            raise ValueError(f"no ping reply from the underlay address {address}")
        return float(m.group(1)) / 1e3

    def counters(self, pairs):
        return [list(self.net.shaper_counters(src, dst)) for src, dst in pairs]

    def failure(self):
        return self.net.failure() if self.net else None

    def tcp_state(self):
        return self.net.tcp_state()

    def relay_stats(self, index):
        return self.net.backend.request(index, {"op": "stats"})

    def cpu_lap(self):
        from testbed.records.cpu import CpuMeter
        if self.cpu is None:
            self.cpu = CpuMeter()
            return None
        return {**self.cpu.lap(), "cores": os.cpu_count()}

    def run(self, host, args, check=True):
        from testbed.emulation.network import run_in
        return run_in(self.net.node(host), args, check=check)

    # ------------------------------------------------------------ processes

    def start(self, name, host, args, env=None, log=None, python=False):
        """Start args in host; `python`: args follow this machine's interpreter."""
        if python:
            args = [sys.executable] + list(args)
        node = self.net.node(host)
        if log:
            os.makedirs(os.path.dirname(log), exist_ok=True)
            with open(log, "wb") as f:
                popen = node.popen(args, stdout=f, stderr=subprocess.STDOUT,
                                   env={**os.environ, **(env or {})})
        else:
            popen = node.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, **(env or {})})
        self.net.state.note("pids", popen.pid)
        self.procs[name] = Process(popen, log)
        return popen.pid

    def poll(self, names=None):
        return {n: p.popen.poll() for n, p in self.procs.items() if names is None or n in names}

    def signal(self, name, sig):
        p = self.procs[name].popen
        if p.poll() is None:
            p.send_signal(sig)

    def wait(self, name, limit=None):
        try:
            return self.procs[name].popen.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            return None

    def output(self, name):
        out, err = self.procs[name].output()
        return base64.b64encode(out).decode(), base64.b64encode(err).decode()

    def stop_processes(self, grace=3.0):
        procs = [p.popen for p in self.procs.values()]
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + grace
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop(self):
        self.stop_processes()
        if self.net is not None:
            self.net.stop()
            self.net = None


def serve(machine, address, port, announce=sys.stdout, silence=DRIVER_SILENCE, part=None):
    """Answer requests on tcp://address:port (0: any free port) until
    `exit`, the driver's silence, or SIGTERM; the bound port is printed to
    `announce` as one JSON line.  part: what answers (a Part)."""
    import zmq
    part = part or Part(machine)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    if port:
        sock.bind(f"tcp://{address}:{port}")
    else:
        port = sock.bind_to_random_port(f"tcp://{address}")
    stopping = []
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stopping.append("SIGTERM"))
    announce.write(json.dumps({READY: True, "port": port, "pid": os.getpid()}) + "\n")
    announce.flush()
    heard = time.monotonic()
    # Started by a process (the machine's Ray actor) whose end means the run's.
    parent = os.getppid()
    try:
        while not stopping:
            if not sock.poll(200):
                if part.net is not None and (time.monotonic() - heard > silence
                                             or parent != 1 and os.getppid() != parent):
                    stopping.append("driver gone")
                continue
            heard = time.monotonic()
            request = json.loads(sock.recv())
            op, args = request.pop("op"), request
            try:
                if op == "exit":
                    stopping.append("exit")
                    value = None
                else:
                    value = getattr(part, op)(**args)
                reply = {"ok": True, "value": value}
            except Exception as e:  # noqa: BLE001 - every error's text goes to the driver
                reply = {"ok": False, "error": str(e) or type(e).__name__,
                         "kind": type(e).__name__}
            sock.send(json.dumps(reply).encode())
    finally:
        part.stop()
        sock.close()
        ctx.term()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m testbed.spanning.node",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine", required=True, help="this machine's name in the cluster")
    parser.add_argument("--listen", required=True, help="control address to answer on")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    serve(args.machine, args.listen, args.port)


if __name__ == "__main__":
    main()
