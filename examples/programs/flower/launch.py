"""Starts Flower's own processes on an emulated host and ends them when
the federated run is over, so each host's program ends by itself.

    python3 launch.py superlink [--port 8000] [--run-config 'num-server-rounds=2 min-nodes=3']
    python3 launch.py supernode --superlink HOST:8000 [flower-supernode options]

superlink: starts `flower-superlink`, submits the Flower app in this
folder to it with `flwr run . testbed --stream`, waits until Flower marks
the run finished, appends Flower's account of it (status, bytes in and
out) to $TESTBED_METRICS where that is set, and stops the SuperLink.
Exits 0 only if the run completed.  The SuperLink's Fleet, Control and
Runtime APIs share one HTTP port (Flower 1.42); `flwr run` reaches it on
127.0.0.1 through the connection `testbed`, written to a Flower
configuration of its own, so the user's ~/.flwr is left alone.

supernode: waits (up to START_TIMEOUT) for the SuperLink named by
`--superlink` to accept connections, then runs `flower-supernode
--insecure` with the options given.  `--max-retries` and `--max-wait-time`
bound how long a running SuperNode tries to reach its SuperLink, so they
say how soon it ends once the SuperLink has gone, not how long the
SuperLink may take to start.  Once it gives up, Flower 1.42's SuperNode
logs "Giving up reconnection" and keeps running (its Runtime API thread
holds the process); on that line it is stopped with SIGTERM, which it
handles gracefully.  Exits 0 if it had registered with the SuperLink
before that, 1 if it never reached it.

Each process gets a Flower home of its own (FLWR_HOME, a temporary
folder).  Flower's output passes through to stderr; a launcher returns
only once every process that inherited that output (Flower's SuperExec and
the apps it started) has closed it, or after STRAGGLER_WAIT seconds.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONNECTION = "testbed"
START_TIMEOUT = 60.0       # seconds the SuperLink may take to answer
FINISH_TIMEOUT = 60.0      # seconds the run may take to be marked finished after its logs end
STOP_GRACE = 15.0          # seconds a Flower process gets to exit on SIGTERM
STRAGGLER_WAIT = 5.0       # seconds its children get to follow it
GAVE_UP = "Giving up reconnection"
REGISTERED = "SuperNode ID:"


def say(text):
    print(f"launch.py: {text}", file=sys.stderr, flush=True)


class Flower:
    """One Flower process, its output relayed line by line to stderr by a
    thread that calls on_line(self, line) for each."""

    def __init__(self, argv, home, on_line=lambda flower, line: None):
        self.proc = subprocess.Popen(argv, cwd=home, env={**os.environ, "FLWR_HOME": home},
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.on_line = on_line
        self.relay = threading.Thread(target=self._relay, daemon=True)
        self.relay.start()

    def _relay(self):
        for line in self.proc.stdout:
            sys.stderr.write(line)
            self.on_line(self, line)

    def stop(self):
        """SIGTERM, then SIGKILL after STOP_GRACE; waits for its output to close."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return self.wait()

    def wait(self):
        """Its exit code, once it and (for up to STRAGGLER_WAIT) what it started have ended."""
        code = self.proc.wait()
        self.relay.join(STRAGGLER_WAIT)
        return code


def flower_home():
    return tempfile.TemporaryDirectory(prefix="flwr-home-")


def serve(args):
    with flower_home() as home:
        env = {**os.environ, "FLWR_HOME": home}
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
                    f'address = "127.0.0.1:{args.port}"\ninsecure = true\n')
        link = Flower(["flower-superlink", "--insecure", "--host", "0.0.0.0", "--port", str(args.port),
                       "--disable-runtime-dependency-installation"], home)
        try:
            if not wait_for_port("127.0.0.1", args.port, lambda: link.proc.poll() is None):
                say(f"the SuperLink did not answer on port {args.port} within {START_TIMEOUT:g}s")
                return 1
            command = ["flwr", "run", ".", CONNECTION, "--stream"]
            if args.run_config:
                command += ["--run-config", args.run_config]
            if subprocess.run(command, env=env, cwd=HERE).returncode != 0:
                say("flwr run failed")
                return 1
            run = finished_run(env)
            if run is None:
                say(f"the run was not marked finished within {FINISH_TIMEOUT:g}s of its last log")
                return 1
            record(run)
            say(f"run {run.get('run-id')}: {run.get('status')}")
            return 0 if run.get("status") == "finished:completed" else 1
        finally:
            link.stop()


def wait_for_port(host, port, alive=lambda: True):
    """True once something accepts connections on host:port (while alive())."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and alive():
        try:
            socket.create_connection((host, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.5)
    return False


def finished_run(env):
    """The run's row (`flwr ls --format json`) once Flower marks it finished, or None."""
    deadline = time.monotonic() + FINISH_TIMEOUT
    while time.monotonic() < deadline:
        out = subprocess.run(["flwr", "ls", CONNECTION, "--format", "json"], env=env, cwd=HERE,
                             capture_output=True, text=True)
        try:
            runs = json.loads(out.stdout).get("runs", [])
        except ValueError:
            runs = []
        done = [r for r in runs if str(r.get("status", "")).startswith("finished")]
        if done:
            return done[-1]
        time.sleep(1)
    return None


def record(run):
    path = os.environ.get("TESTBED_METRICS")
    if path:
        traffic = run.get("network-traffic") or {}
        with open(path, "a") as f:
            f.write(json.dumps({"flower_status": run.get("status"),
                                "flower_inbound_bytes": traffic.get("inbound-bytes"),
                                "flower_outbound_bytes": traffic.get("outbound-bytes")}) + "\n")


def node(options):
    superlink = options[options.index("--superlink") + 1] if "--superlink" in options[:-1] else ""
    host, _, port = superlink.rpartition(":")
    if not host or not port.isdigit():
        say("name the SuperLink: --superlink HOST:PORT")
        return 2
    if not wait_for_port(host, int(port)):
        say(f"the SuperLink at {superlink} did not answer within {START_TIMEOUT:g}s")
        return 1
    seen = {"registered": False, "gave_up": False}

    def on_line(supernode, line):
        seen["registered"] = seen["registered"] or REGISTERED in line
        if GAVE_UP in line and not seen["gave_up"]:
            seen["gave_up"] = True
            supernode.proc.send_signal(signal.SIGTERM)

    with flower_home() as home:
        code = Flower(["flower-supernode", "--insecure", *options], home, on_line).wait()
    if not seen["gave_up"]:
        return code
    if not seen["registered"]:
        say("the SuperLink never answered")
        return 1
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    roles = p.add_subparsers(dest="role", required=True)
    link = roles.add_parser("superlink", help="serve one run of this folder's app, then stop")
    link.add_argument("--port", type=int, default=8000)
    link.add_argument("--run-config", default="", help="overrides of [tool.flwr.app.config]")
    roles.add_parser("supernode", help="flower-supernode until it gives up on the SuperLink")
    if argv[:1] == ["supernode"]:
        return node(argv[1:])
    return serve(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
