"""Control of a running experiment: the commands, the Unix socket that
`testbed inject` reaches from another terminal, and the `--console` prompt.

One `Commands` object carries out every command, whatever its source, so
the console, the socket and the tests share one grammar.  A command is
parsed whole before anything changes: a bad one is one sentence and
changes nothing.

    link A B [bw RATE] [delay TIME] [jitter TIME] [loss SHARE] [oneway]
    link A B down|up [oneway]
    speed WORKER|DC FACTOR
    show links | show probe
    trace A B FILE [loop]
    help
"""

import cmd
import contextlib
import json
import os
import socket
import threading
import time

from agents.events import read_events
from testbed.emulation.commands import (
    CommandError,
    failure_line,
    links_text,
    parse_link_change,
    parse_speed,
    words_of,
)
from testbed.emulation.delay import DelayError
from testbed.emulation.network import ChangeFailed, NetworkError
from testbed.spec import dynamics
from testbed.spec.units import format_rate

HELP = __doc__.split("\n\n")[2].rstrip()
SOCKET_NAME = "control.sock"
MAX_LINE_BYTES = 4096


def latest_estimates(run_dir):
    """{(src, dst): the newest probe estimate} from the probes' event files."""
    latest = {}
    agents = os.path.join(run_dir, "agents")
    for name in os.listdir(agents) if os.path.isdir(agents) else []:
        if name.endswith("-p.jsonl"):
            for e in read_events(os.path.join(agents, name)):
                if e["ev"] == "estimate":
                    latest[(e["src"], e["dst"])] = e
    return latest


class Commands:
    """Carries out commands on a running experiment."""

    def __init__(self, net, engine, set_speed, run_dir, base_dir="."):
        self.net = net
        self.engine = engine
        self.set_speed = set_speed
        self.run_dir = run_dir
        self.base_dir = base_dir
        self.lock = threading.Lock()
        self.dcs = [dc.name for dc in net.spec.datacenters]
        self.workers_by_dc = {dc.name: [f"{dc.name}-w{i}" for i in range(dc.workers)]
                              for dc in net.spec.datacenters}
        experiment = net.spec.experiment
        self.max_speed = 1.0 if experiment is not None and experiment.workload == "train" \
            else dynamics.MAX_SPEED
        self.horizon = experiment.max_time if experiment is not None else 24 * 3600.0

    def names(self):
        return self.dcs + [w for ws in self.workers_by_dc.values() for w in ws]

    def execute(self, line, source):
        """Run one command line; returns the text to show.  CommandError for
        anything wrong, with nothing changed; whatever else a command raises
        is a CommandError too, so no source of commands dies of one."""
        words = words_of(line)
        if not words:
            return ""
        try:
            return self._execute(words[0], words[1:], source)
        except CommandError:
            raise
        except Exception as e:  # noqa: BLE001 - one bad command must not end the run's control
            raise CommandError(failure_line(e)) from None

    def _execute(self, verb, rest, source):
        with self.lock:
            if verb == "link":
                a, b, both, changes = parse_link_change(rest, self.dcs)
                try:
                    self.net.change_link(a, b, both=both, source=source, **changes)
                except KeyError as e:
                    raise CommandError(e.args[0]) from None
                except ChangeFailed as e:
                    raise CommandError(f"the link was changed only in part: {e}") from None
                except (NetworkError, DelayError) as e:
                    raise CommandError(f"the link was not changed: {e}") from None
                return self.show_links()
            if verb == "speed":
                workers, speed = parse_speed(rest, self.workers_by_dc, self.max_speed)
                self.set_speed(workers, speed, source)
                return f"speed {speed:g} for {', '.join(workers)}"
            if verb == "show":
                if rest == ["links"]:
                    return self.show_links()
                if rest == ["probe"]:
                    return self.show_probe()
                raise CommandError("usage: show links | show probe")
            if verb == "trace":
                return self.trace(rest)
            if verb == "help":
                return HELP
        raise CommandError(f"unknown command {verb!r}; try help")

    def trace(self, rest):
        loop = bool(rest) and rest[-1] == "loop"
        rest = rest[:-1] if loop else rest
        if len(rest) != 3:
            raise CommandError("usage: trace A B FILE [loop]")
        a, b, path = rest
        if a not in self.dcs or b not in self.dcs:
            raise CommandError(f"unknown data center in {a} {b} (known: {', '.join(self.dcs)})")
        try:
            self.net.plan.link(a, b)
        except KeyError:
            raise CommandError(f"there is no WAN link between {a} and {b}") from None
        path = self.trace_path(path)
        try:
            points = dynamics.read_trace(path)
        except dynamics.TraceError as e:
            raise CommandError(str(e)) from None
        schedule = dynamics.Schedule("trace", ("link", a, b, True), tuple(points),
                                     loop=dynamics.trace_period(points) if loop else 0.0)
        now = self.engine.now()
        until = max(0.0, self.horizon - now)
        if schedule.count(until) > dynamics.MAX_ACTIONS:
            raise CommandError(f"the trace makes {schedule.count(until)} changes in the "
                               f"{until:.0f}s left; at most {dynamics.MAX_ACTIONS}")
        self.engine.add(schedule.actions(until=until), offset=now)
        return f"trace {os.path.basename(path)} on {a}-{b} from now ({len(points)} rows" \
               + (", looped)" if loop else ")")

    def trace_path(self, path):
        """A trace named at run time, relative to the topology's folder and
        inside it: the command comes over a socket or the live page, and
        is read as root, so it names no other file (refused before it is
        opened; links out of the folder are followed first)."""
        path = path if os.path.isabs(path) else os.path.join(self.base_dir, path)
        folder = os.path.realpath(self.base_dir)
        if os.path.commonpath([os.path.realpath(path), folder]) != folder:
            raise CommandError(f"trace {path}: traces named while a run goes on are read from "
                               f"the topology's folder ({folder}) only")
        return path

    def show_links(self):
        return links_text(self.net.current)

    def show_probe(self):
        estimates = latest_estimates(self.run_dir)
        if not estimates:
            return "no probe estimates yet (is experiment.probe set?)"
        now = time.monotonic()
        lines = [f"{'direction':28}{'configured':>12}{'estimate':>12}{'error':>8}{'rtt':>9}"
                 f"{'confidence':>12}{'age':>7}"]
        for (src, dst), d in self.net.current.items():
            e = estimates.get((src, dst))
            if e is None:
                lines.append(f"{src + ' -> ' + dst:28}{format_rate(d.rate):>12}{'-':>12}")
                continue
            err = (e["bw"] - d.rate) / d.rate * 100
            rtt = f"{e['rtt'] * 1e3:.1f}ms" if e.get("rtt") else "-"
            lines.append(f"{src + ' -> ' + dst:28}{format_rate(d.rate):>12}"
                         f"{e['bw'] / 1e6:>9.2f}Mb/s{err:>+7.1f}%{rtt:>9}{e['confidence']:>12.2f}"
                         f"{now - e['t']:>6.1f}s")
        return "\n".join(lines)


UNIX_PATH_MAX = 107


@contextlib.contextmanager
def reachable(path):
    """A name for a Unix socket path that fits the kernel's 108-byte limit:
    the path itself, or the same file reached through /proc/self/fd/ of its
    folder when the run folder lies deep."""
    if len(path.encode()) <= UNIX_PATH_MAX:
        yield path
        return
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{os.path.basename(path)}"
    finally:
        os.close(fd)


class ControlServer:
    """The run folder's Unix socket: one command line in, one reply out.
    Readable and writable by its owner only."""

    def __init__(self, commands, run_dir):
        self.commands = commands
        self.path = os.path.join(run_dir, SOCKET_NAME)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            with reachable(self.path) as name:
                self.sock.bind(name)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self.sock.listen(4)
        self.sock.settimeout(0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="control")

    def start(self):
        self._thread.start()
        return self

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    conn.sendall((json.dumps(self.answer(conn)) + "\n").encode())
                except OSError:
                    pass

    def answer(self, conn):
        """The reply to the one command line a client sends; never raises
        but OSError, so the socket outlives any command."""
        raw = conn.makefile("rb").readline(MAX_LINE_BYTES + 1)
        try:
            if len(raw) > MAX_LINE_BYTES:
                raise CommandError(f"the command is over {MAX_LINE_BYTES} bytes")
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise CommandError("the command is not UTF-8 text") from None
            return {"ok": True, "text": self.commands.execute(line, "inject")}
        except CommandError as e:
            return {"ok": False, "text": str(e)}
        except Exception as e:  # noqa: BLE001 - the socket serves the rest of the run
            return {"ok": False, "text": failure_line(e)}

    def stop(self):
        self._stop.set()
        self.sock.close()
        self._thread.join(timeout=2)
        try:
            os.unlink(self.path)
        except OSError:
            pass


def inject(run_dir, line, timeout=10):
    """Send one command to a running experiment; returns (ok, text)."""
    path = os.path.join(run_dir, SOCKET_NAME)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        with reachable(path) as name:
            s.connect(name)
        s.sendall((line + "\n").encode())
        reply = json.loads(s.makefile("r").readline() or "{}")
    except (FileNotFoundError, ConnectionRefusedError):
        raise CommandError(f"no running experiment in {run_dir} (its control socket is gone)") from None
    finally:
        s.close()
    return reply.get("ok", False), reply.get("text", "no reply")


class RunConsole(cmd.Cmd):
    """`testbed run --console`: the commands at a prompt, with completion."""
    prompt = "testbed> "
    intro = "Commands: link, speed, show links, show probe, trace, help. The run goes on meanwhile."

    def __init__(self, commands, stdout):
        super().__init__(stdout=stdout)
        self.commands = commands

    def onecmd(self, line):
        line = line.strip()
        if line in ("EOF", "exit", "quit"):
            return True
        try:
            text = self.commands.execute(line, "console")
        except CommandError as e:
            text = f"error: {e}"
        if text:
            self.stdout.write(text + "\n")
            self.stdout.flush()
        return False

    def completenames(self, text, *ignored):
        return [v for v in ("link", "speed", "show", "trace", "help") if v.startswith(text)]

    def completedefault(self, text, line, begidx, endidx):
        words = line.split()
        if words[0] == "show":
            options = ["links", "probe"]
        elif words[0] == "link" and len(words) >= 3 + (text == ""):
            options = ["bw", "delay", "jitter", "loss", "down", "up", "oneway"]
        elif words[0] == "speed":
            options = self.commands.names()
        else:
            options = self.commands.dcs
        return [o for o in options if o.startswith(text)]
