"""What a run has created, written down as it is created, and its removal.

Each run gets an id; everything it makes in the root namespace is named
with the prefix ``tb<id>`` and its namespaces and processes are listed in
``<state root>/<id>/state.json``, which is rewritten after every step.  So a
runner killed with SIGKILL at any point leaves enough behind for
`testbed clean` to remove exactly what that run made, and nothing else.
"""

import json
import os
import re
import secrets
import signal
import subprocess
import time

from testbed.emulation.plan import PREFIX, run_prefix

STATE_ROOT = os.environ.get("TESTBED_STATE_DIR", "/run/geo-testbed")
RUN_ID_RE = re.compile(r"[0-9a-f]{4}")
ORPHAN_LINK_RE = re.compile(rf"^{PREFIX}([0-9a-f]{{4}})[a-z]")
# Mininet names each host's shell "mininet:<node>"; relays carry --tag <prefix>.
ORPHAN_CMD_RE = re.compile(rf"(?:mininet:|--tag\x00){PREFIX}([0-9a-f]{{4}})")


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
                             "runner_pid": os.getpid(), "runner_start": _start_time(os.getpid()),
                             "created": time.time(),
                             "netns": [], "pids": [], "links": []}

    @classmethod
    def create(cls, run_id=None):
        os.makedirs(STATE_ROOT, mode=0o700, exist_ok=True)
        state = cls(run_id or new_run_id())
        os.makedirs(state.dir, mode=0o700)
        state.save()
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
        """Add values to one of the lists (netns inodes, pids, links)."""
        for v in values:
            if v not in self.data[key]:
                self.data[key].append(v)
        self.save()

    def set(self, **items):
        self.data.update(items)
        self.save()

    def runner_alive(self):
        return _alive(self.data.get("runner_pid"), self.data.get("runner_start"))


def _alive(pid, start_time=None):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return start_time is None or _start_time(pid) == start_time


def _start_time(pid):
    """The process's start time in clock ticks: tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def netns_inode(pid):
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _processes():
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _ids_in_use():
    ids = set()
    for name in root_links():
        m = ORPHAN_LINK_RE.match(name)
        if m:
            ids.add(m.group(1))
    return ids


def root_links():
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            names.append(parts[1].strip().split("@")[0])
    return names


def processes_of(run_id, netns):
    """Pids living in the run's namespaces or carrying its name."""
    own = os.getpid()
    netns = set(netns)
    prefix = run_prefix(run_id)
    found = []
    for pid in _processes():
        if pid == own:
            continue
        if netns and netns_inode(pid) in netns:
            found.append(pid)
            continue
        m = ORPHAN_CMD_RE.search(_cmdline(pid))
        if m and f"{PREFIX}{m.group(1)}" == prefix:
            found.append(pid)
    return found


def _terminate(pids, grace=2.0):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p) and not _zombie(p)]
            if not pids:
                return
            time.sleep(0.05)


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def remove_run(run_id, netns=()):
    """Remove every process, namespace and root-namespace link of one run.
    Returns what was removed, for the user."""
    removed = {"processes": 0, "links": []}
    pids = processes_of(run_id, netns)
    _terminate(pids)
    removed["processes"] = len(pids)
    # A namespace disappears with its last process and takes its veth ends
    # (and their peers) with it; bridges and strays are deleted by name.
    prefix = run_prefix(run_id)
    for name in root_links():
        if name.startswith(prefix):
            r = subprocess.run(["ip", "link", "del", name], capture_output=True)
            if r.returncode == 0:
                removed["links"].append(name)
    state_dir = os.path.join(STATE_ROOT, run_id)
    if os.path.isdir(state_dir):
        for f in os.listdir(state_dir):
            os.unlink(os.path.join(state_dir, f))
        os.rmdir(state_dir)
    return removed


def clean(include_running=False):
    """Remove the objects of every run whose runner is gone (all runs with
    include_running), plus orphans that carry the testbed's prefix but have
    no state file.  Idempotent.  Returns {run_id: removed}."""
    report = {}
    skipped = set()
    if os.path.isdir(STATE_ROOT):
        for rid in sorted(os.listdir(STATE_ROOT)):
            if not RUN_ID_RE.fullmatch(rid):
                continue
            try:
                state = RunState.read(rid)
            except (OSError, ValueError):
                state = RunState(rid)
                state.data["runner_pid"] = None
            if state.runner_alive() and not include_running:
                skipped.add(rid)
                continue
            report[rid] = remove_run(rid, state.data.get("netns", ()))
    orphans = set(_ids_in_use())
    for pid in _processes():
        m = ORPHAN_CMD_RE.search(_cmdline(pid))
        if m:
            orphans.add(m.group(1))
    for rid in sorted(orphans - skipped - set(report)):
        report[rid] = remove_run(rid)
    return report, skipped
