"""What a run has created, written down as it is created, and its removal.

Each run gets an id; its objects are named with the prefix ``tb<id>`` and
listed in ``<state root>/<id>/state.json``, rewritten after every step: the
names of its interfaces, the inodes of its namespaces, and each process it
started as an identity (pid, start time, command line).  The file exists
before the first object does and is deleted after the last one is gone, so
a runner killed with SIGKILL at any point leaves enough behind for
`testbed clean` to remove exactly what that run made.

Nothing is signalled or deleted on a name pattern or a number alone: a pid
or a namespace inode in a stale file may belong to someone else by now.  A
process is signalled only while its start time and command line still
match.  A run's namespaces are pinned by bind mounts in its state folder
(as `ip netns` does), so none of them can die, and its inode be reused,
before `testbed clean` has looked inside; a recorded namespace that is not
pinned counts as the run's only while one of the run's verified processes
lives in it or it still holds one of the run's interfaces.
"""

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

from testbed.emulation.plan import PREFIX, run_prefix
from testbed.records.runfolder import close_killed

DEFAULT_STATE_ROOT = "/run/geo-testbed"
STATE_ROOT = os.environ.get("TESTBED_STATE_DIR", DEFAULT_STATE_ROOT)
RUN_ID_RE = re.compile(r"[0-9a-f]{4}")
LINK_ID_RE = re.compile(rf"^{PREFIX}([0-9a-f]{{4}})[a-z]")
# The last word of a Mininet host's shell: "mininet:<node>", nodes named by plan.py.
SHELL_NAME_RE = re.compile(rf"mininet:{PREFIX}([0-9a-f]{{4}})[a-z][0-9a-z]*")
RELAY_MODULE = "testbed.emulation.relay"
DELAYLINE_PROGRAM = "testbed-delayline"
SWEEPS = 3          # discovery rounds: a process may fork while its parent is being stopped


def new_run_id():
    taken = set(os.listdir(STATE_ROOT)) if os.path.isdir(STATE_ROOT) else set()
    taken |= _ids_in_use()
    while True:
        rid = secrets.token_hex(2)
        if rid not in taken:
            return rid


class RunState:
    """The state file of one run; every change is written through to disk."""

    def __init__(self, run_id, data=None):
        self.run_id = run_id
        self.dir = os.path.join(STATE_ROOT, run_id)
        self.path = os.path.join(self.dir, "state.json")
        self.data = data or {"run_id": run_id, "prefix": run_prefix(run_id),
                             "runner": identity(os.getpid()), "created": time.time(),
                             "run_dir": None, "netns": [], "processes": [], "links": []}

    @classmethod
    def create(cls, run_id=None):
        """A new run's state, whole before it appears under STATE_ROOT: a
        `testbed clean` running meanwhile never finds it without its file."""
        os.makedirs(STATE_ROOT, mode=0o700, exist_ok=True)
        state = cls(run_id or new_run_id())
        draft = tempfile.mkdtemp(prefix=f".{state.run_id}.", dir=STATE_ROOT)
        try:
            with open(os.path.join(draft, "state.json"), "w") as f:
                json.dump(state.data, f, indent=1)
            os.rename(draft, state.dir)
        except BaseException:
            shutil.rmtree(draft, ignore_errors=True)
            raise
        return state

    @classmethod
    def read(cls, run_id):
        with open(os.path.join(STATE_ROOT, run_id, "state.json")) as f:
            return cls(run_id, json.load(f))

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def note(self, key, *values):
        """Add values to one of the lists: "netns" inodes, "links" names, or
        "pids", which are kept as identities so a reused pid is told apart."""
        if key == "pids":
            key, values = "processes", [i for i in map(identity, values) if i]
        for v in values:
            if v not in self.data[key]:
                self.data[key].append(v)
        self.save()

    def set(self, **items):
        self.data.update(items)
        self.save()

    def pin(self, nodes):
        """Pin the network namespace of each {name: pid} with a bind mount, so
        it outlives its processes until the run is removed, and record it."""
        folder = os.path.join(self.dir, "netns")
        os.makedirs(folder, exist_ok=True)
        inodes = []
        for name, pid in nodes.items():
            path = os.path.join(folder, name)
            open(path, "w").close()
            subprocess.run(["mount", "--bind", f"/proc/{pid}/ns/net", path], check=True,
                           capture_output=True)
            inodes.append(os.stat(path).st_ino)
        self.note("netns", *inodes)


# ------------------------------------------------------------ identities

def identity(pid):
    """{pid, start, cmd} of a live process, or None."""
    start, cmd = start_time(pid), command(pid)
    if start is None or not cmd:
        return None
    return {"pid": pid, "start": start, "cmd": cmd}


def matches(ident):
    """Is the process that ident recorded still alive, with the same start
    time and command line (so not a later process that reuses its pid)?"""
    if not isinstance(ident, dict) or not isinstance(ident.get("pid"), int):
        return False
    return start_time(ident["pid"]) == ident.get("start") and command(ident["pid"]) == ident.get("cmd")


def start_time(pid):
    """The process's start time in clock ticks: tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def command(pid):
    """The command line a process runs, without the launchers in front of it.
    Mininet starts programs through `mnexec [opts] CMD` and its shells through
    `env PS1=.. bash ..`, which exec what follows: the pid and start time
    stay, the command line changes.  So the target is what is compared."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\x00")[:-1]
    except OSError:
        return []
    return unwrap(argv)


def unwrap(argv):
    """argv with leading `mnexec [-cdnp] [-a PID] [-g GROUP] [-r PRIO]` and
    `env [NAME=VALUE]...` removed."""
    argv = list(argv)
    while argv:
        prog = os.path.basename(argv[0])
        if prog == "mnexec":
            i = 1
            while i < len(argv) and argv[i].startswith("-"):
                flags = argv[i][1:]
                i += 1
                for k, c in enumerate(flags):
                    if c in "agr":       # an option with a value: inline or the next word
                        if k == len(flags) - 1:
                            i += 1
                        break
            argv = argv[i:]
        elif prog == "env":
            i = 1
            while i < len(argv) and "=" in argv[i] and not argv[i].startswith("-"):
                i += 1
            argv = argv[i:]
        else:
            return argv
    return argv


def named_run(cmd):
    """The run id a command line names by the testbed's own naming, or None:
    a Mininet shell of a testbed node, or a delay-line relay with its tag."""
    if not cmd:
        return None
    if os.path.basename(cmd[0]) == "bash":
        m = SHELL_NAME_RE.fullmatch(cmd[-1])
        return m.group(1) if m else None
    is_relay = RELAY_MODULE in cmd or os.path.basename(cmd[0]) == DELAYLINE_PROGRAM
    if is_relay and "--tag" in cmd:
        i = cmd.index("--tag")
        tag = cmd[i + 1] if i + 1 < len(cmd) else ""
        if re.fullmatch(rf"{PREFIX}[0-9a-f]{{4}}", tag):
            return tag[len(PREFIX):]
    return None


def netns_inode(pid):
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def interfaces_of(pid):
    """Interface names in the network namespace of a process."""
    try:
        with open(f"/proc/{pid}/net/dev") as f:
            lines = f.readlines()[2:]
    except OSError:
        return set()
    return {line.split(":", 1)[0].strip() for line in lines}


def pinned(run_id):
    """{path: inode} of the namespaces pinned in a run's state folder.  A file
    counts only while a namespace is mounted on it."""
    folder = os.path.join(STATE_ROOT, run_id, "netns")
    nsfs = os.stat("/proc/self/ns/net").st_dev
    found = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        path = os.path.join(folder, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if st.st_dev == nsfs:
            found[path] = st.st_ino
    return found


def _unpin(run_id):
    for path in pinned(run_id):
        subprocess.run(["umount", path], capture_output=True)


def _pids():
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _host_namespaces():
    """The root namespace (and ours): never a run's, whatever a file says."""
    return {ino for ino in (netns_inode(1), netns_inode(os.getpid())) if ino is not None}


def _ids_in_use():
    ids = set()
    for name in root_links():
        m = LINK_ID_RE.match(name)
        if m:
            ids.add(m.group(1))
    for pid in _pids():
        rid = named_run(command(pid))
        if rid:
            ids.add(rid)
    return ids


def root_links():
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            names.append(parts[1].strip().split("@")[0])
    return names


# ------------------------------------------------------------ finding

def processes_of(run_id, data):
    """Identities of the live processes that belong to a run: recorded ones
    still matching, those the testbed's naming proves, and every process in
    a namespace proven to be the run's."""
    own = os.getpid()
    host_ns = _host_namespaces()
    seen = [(pid, command(pid), netns_inode(pid)) for pid in _pids() if pid != own]
    found = {i["pid"]: i for i in data.get("processes", ()) if matches(i)}
    for pid, cmd, _ in seen:
        if pid not in found and named_run(cmd) == run_id:
            found[pid] = identity(pid)
    # A namespace that is pinned, or that one of these lives in, cannot have
    # been reused: it is alive.
    proven = ({netns_inode(pid) for pid in found} | set(pinned(run_id).values())) - host_ns
    listed = set(data.get("netns", ())) - host_ns
    names = set(data.get("links", ()))
    held = {}        # listed inode -> does that namespace hold one of the run's interfaces?
    for pid, _, ns in seen:
        if pid in found or ns is None:
            continue
        if ns in listed and ns not in proven and ns not in held:
            held[ns] = bool(names & interfaces_of(pid))
        if ns in proven or held.get(ns):
            found[pid] = identity(pid)
    return [i for i in found.values() if i]


# ------------------------------------------------------------ removing

def signal_process(ident, sig):
    """Send sig to the process ident recorded, and to no other: the pidfd
    pins the process, and its identity is checked after pinning."""
    try:
        fd = os.pidfd_open(ident["pid"])
    except (ProcessLookupError, OSError):
        return False
    try:
        if not matches(ident):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except ProcessLookupError:
        return False
    finally:
        os.close(fd)


def terminate(idents, grace=2.0):
    """SIGTERM, then SIGKILL what still runs after grace seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [i for i in idents if signal_process(i, sig)]
        deadline = time.monotonic() + grace
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [i for i in left if matches(i)]
        if not left:
            return


def remove_run(run_id, data):
    """Remove every process, namespace and root-namespace interface of one
    run, and its state folder.  Returns what was removed, for the user."""
    removed = {"processes": 0, "links": []}
    for _ in range(SWEEPS):
        idents = processes_of(run_id, data)
        if not idents:
            break
        terminate(idents)
        removed["processes"] += len(idents)
    _unpin(run_id)
    # A namespace disappears with its last process and takes its interfaces
    # (and their veth peers) with it; what the root namespace holds goes by
    # its recorded name.
    names = set(data.get("links", ()))
    for name in root_links():
        if name in names:
            r = subprocess.run(["ip", "link", "del", name], capture_output=True)
            if r.returncode == 0:
                removed["links"].append(name)
    state_dir = os.path.join(STATE_ROOT, run_id)
    if os.path.isdir(state_dir) and not pinned(run_id):
        shutil.rmtree(state_dir)
    return removed


def close_run_folder(data):
    """The run folder of a run whose runner died, if it has one: its control
    socket goes and a status still saying running says killed."""
    run_dir = data.get("run_dir")
    if not run_dir or not os.path.isdir(run_dir):
        return {}
    pid = (data.get("runner") or {}).get("pid")
    reason = (f"the testbed process (pid {pid}) died before the run ended; "
              "`testbed clean` removed what it left")
    return {"run_dir": run_dir, "killed": close_killed(run_dir, reason)}


def clean(include_running=False):
    """Remove the objects of every run whose runner is gone (all runs with
    include_running), plus processes the testbed's naming proves are a run's
    that has no state file.  That last sweep runs only over the machine's
    own state root: under another one (TESTBED_STATE_DIR) the runs of the
    default root are invisible, and a live one would look orphaned.
    Idempotent.  Returns ({run_id: removed}, skipped)."""
    report = {}
    skipped = set()
    if os.path.isdir(STATE_ROOT):
        for rid in sorted(os.listdir(STATE_ROOT)):
            if not RUN_ID_RE.fullmatch(rid):
                continue
            try:
                data = RunState.read(rid).data
            except (OSError, ValueError):
                data = {}
            if not isinstance(data, dict):
                data = {}
            alive = matches(data.get("runner"))
            if alive and not include_running:
                skipped.add(rid)
                continue
            folder = {} if alive else close_run_folder(data)
            report[rid] = {**remove_run(rid, data), **folder}
    if STATE_ROOT != DEFAULT_STATE_ROOT:
        return report, skipped
    orphans = {named_run(command(pid)) for pid in _pids()} - {None}
    for rid in sorted(orphans - skipped - set(report)):
        # A run that began after the listing above has written its state by
        # now (before its first process): it is not an orphan.
        if os.path.isdir(os.path.join(STATE_ROOT, rid)):
            continue
        report[rid] = remove_run(rid, {})
    return report, skipped
