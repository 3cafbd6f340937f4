"""Sweeps on a Ray cluster: every setting is a Ray task on a machine that
joined with one unit of the custom resource `testbed`, so each machine runs
one emulation at a time (two would distort each other's timing).

A task runs the setting exactly as a local sweep does (sweep.run_locally,
as root) in a scratch folder of its machine, and returns the finished run
folder as tar bytes; the driver unpacks it into its own results/, where it
sits as a local run would.  A task whose worker process dies is retried by
Ray up to MAX_RETRIES times, then the setting is recorded as failed with
the reason.  Ctrl-C cancels the tasks: first as a KeyboardInterrupt inside
each (its run tears its network down), then, for a task still running
after CANCEL_GRACE, by killing its worker; what a killed worker left is
removed when the next task starts on that machine, or by `testbed clean`.

This is the only module that imports ray, and only when a cluster is used.
"""

import contextlib
import functools
import io
import json
import os
import shutil
import signal
import socket
import stat
import tarfile
import tempfile
import threading

from testbed.records.runfolder import is_run_name
from testbed.run.provenance import plugin_files, relocated
from testbed.sweeps import sweep

RESOURCE = "testbed"
MAX_RETRIES = 2             # attempts after the first, when a worker process dies
CANCEL_GRACE = 30.0         # seconds a cancelled run gets to tear its network down
POLL = 1.0
CONNECT_TIMEOUT = 5.0
SCRATCH_ROOT = "/var/tmp/geo-testbed-cluster"
INSTALL_HINT = "install the cluster extra: scripts/install.sh --cluster (or pip install '.[cluster]')"


class ClusterError(RuntimeError):
    """The cluster cannot run the sweep; the text says why."""


class AddressError(ClusterError):
    """--cluster names no address a head could have."""


def _ray():
    try:
        import ray
    except ImportError:
        raise ClusterError(f"--cluster needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def connect(address):
    """Join the Ray cluster at address ("auto": Ray's own lookup).  Returns
    how many `testbed` units (machines) it offers."""
    ray = _ray()
    _check_reachable(address)
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    except Exception as e:  # noqa: BLE001 - Ray raises several kinds for an unreachable cluster
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ClusterError(f"cannot join a Ray cluster at {address}: {first}") from None
    units = int(ray.cluster_resources().get(RESOURCE, 0))
    if units < 1:
        ray.shutdown()
        raise ClusterError(f"the Ray cluster at {address} has no machine offering the "
                           f"'{RESOURCE}' resource: join machines with "
                           f"ray start --address HEAD:6379 --resources '{{\"{RESOURCE}\": 1}}'")
    return units


def _check_reachable(address):
    """Ray waits minutes for a head that is not there; a closed port is
    told at once.  ("auto" and ray:// addresses are left to Ray.)"""
    host, sep, port = address.rpartition(":")
    if address == "auto" or "://" in address:
        return
    if not sep or not host or not port.isdigit():
        raise AddressError(f"--cluster {address!r}: give the head's HOST:PORT (e.g. 10.0.0.1:6379) or auto")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as e:
        raise ClusterError(f"no Ray head answers at {address}: {e.strerror or e}") from None


def disconnect():
    ray = _ray()
    if ray.is_initialized():
        ray.shutdown()


def progress_text(running, left):
    """The sweep's progress line: what runs where and how many wait.
    running: {label: machine}."""
    parts = [f"{label} on {machine}" for label, machine in sorted(running.items())]
    text = ("running " + ", ".join(parts)) if parts else "waiting for a machine"
    return f"{text}; {left} left" if left else text


# ------------------------------------------------------------ on the driver


class Board:
    """A Ray actor the tasks tell where they run, for the progress line."""

    def __init__(self):
        self.where = {}

    def start(self, label, machine):
        self.where[label] = machine

    def view(self):
        return dict(self.where)


def executor(delay_backend):
    """A sweep.run_sweep execute(): every setting a task on the cluster
    joined by connect()."""
    def execute(todo, tell):
        return _execute(_ray(), todo, tell, delay_backend)
    return execute


def _execute(ray, todo, tell, delay_backend):
    if not todo:
        return
    board = ray.remote(num_cpus=0)(Board).remote()
    task = ray.remote(num_cpus=0, resources={RESOURCE: 1}, max_retries=MAX_RETRIES)(run_task)
    pending = {}
    for p in todo:
        with open(p.spec.source) as f:
            pending[task.remote(p, f.read(), delay_backend, board, plugin_files(p.spec))] = p
    where = {}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL)
            with contextlib.suppress(ray.exceptions.RayError):
                where.update(ray.get(board.view.remote(), timeout=POLL))
            for ref in ready:
                p = pending.pop(ref)
                yield p, _receive(ray, ref, p, where.get(p.setting.label))
            if pending:
                left = {p.setting.label for p in pending.values()}
                running = {k: v for k, v in where.items() if k in left}
                tell(progress_text(running, len(pending) - len(running)))
    finally:
        if pending:
            _cancel(ray, list(pending))


def _cancel(ray, refs):
    """A KeyboardInterrupt in each task first, so its run tears its network
    down; a task still running after CANCEL_GRACE loses its worker."""
    for ref in refs:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=False)
    _, running = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE)
    for ref in running:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True)


def _receive(ray, ref, planned, machine):
    """(run folder or None, status, reason, machine) of one finished task."""
    try:
        result = ray.get(ref)
    except ray.exceptions.TaskCancelledError:
        raise KeyboardInterrupt from None
    except ray.exceptions.RayTaskError as e:
        # A Python error in the task (the testbed missing on that machine, say): not retried.
        cause = e.cause if isinstance(e.cause, BaseException) else e
        return None, "failed", f"the task failed on {machine or 'the cluster'}: " \
                               f"{type(cause).__name__}: {cause}".splitlines()[0], machine
    except ray.exceptions.RayError as e:
        # Its worker process or machine died, on every attempt Ray made.
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return None, "failed", (f"{type(e).__name__} after {1 + MAX_RETRIES} attempts on the "
                                f"cluster: {first}"), machine
    if result.get("error"):
        # As locally: an error before any run folder would fail every setting alike.
        raise ClusterError(f"{result['machine']}: {result['error']}")
    run = unpack(result["tar"], result, planned) if result.get("tar") else None
    return run, result["status"], result["reason"], result["machine"]


def unpack(data, result, planned):
    """Put a shipped run folder into the setting's folder, as a local run
    would be, and return its path.  It appears whole (a rename), so a sweep
    never sees half of it.  What a machine sends is not trusted: a name
    that is not a run folder's is refused before anything is unpacked, and
    tar's "data" filter refuses members that would land outside (absolute
    paths, `..`, links out), devices and set-user-ID bits."""
    name = result["name"]
    if not isinstance(name, str) or not is_run_name(name):
        raise ClusterError(f"a task sent back {name!r}, not a run folder")
    os.makedirs(planned.folder, exist_ok=True)
    incoming = tempfile.mkdtemp(prefix=".incoming-", dir=planned.folder)
    try:
        try:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(incoming, filter="data")
        except (tarfile.TarError, OSError) as e:
            raise ClusterError(f"a task sent back a run folder that cannot be unpacked safely: "
                               f"{e}") from None
        src = os.path.join(incoming, name)
        if not os.path.isdir(src) or os.path.islink(src):
            raise ClusterError(f"a task sent back {name!r}, not a run folder")
        dest, n = os.path.join(planned.folder, name), 1
        while os.path.exists(dest):
            n += 1
            dest = os.path.join(planned.folder, f"{name}-{n}")
        repoint(src, {result["source"]: planned.spec.source, result["run"]: dest})
        os.rename(src, dest)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    return dest


def repoint(run_dir, moves):
    """The run's JSON files (its spec, the agents' configs) name the paths
    it had on its machine; name the driver's instead, as a local run would.
    moves: {path there: path here}; the text is otherwise kept byte for byte."""
    for folder, _, files in os.walk(run_dir):
        for name in files:
            if not name.endswith(".json"):
                continue
            path = os.path.join(folder, name)
            with open(path) as f:
                text = f.read()
            changed = text
            for old, new in moves.items():
                changed = changed.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
            if changed != text:
                with open(path, "w") as f:
                    f.write(changed)


# ------------------------------------------------------------ on a machine of the cluster


def run_task(planned, source_text, delay_backend, board, plugins=None):
    """One setting on this machine, as a local sweep runs it.  Returns
    {machine, status, reason, name, tar} or {machine, error}."""
    ray = _ray()
    machine = f"{socket.gethostname()} ({ray.util.get_node_ip_address()})"
    board.start.remote(planned.setting.label, machine)
    try:
        root = scratch_root()
    except ClusterError as e:
        return {"machine": machine, "error": str(e)}
    remove_leftovers()
    scratch = tempfile.mkdtemp(prefix=f"{_own_tag()}-", dir=root)
    try:
        with _as_locally():
            here = _localized(planned, source_text, scratch, plugins or {})
            try:
                run, status, reason = sweep.attempt(
                    here, functools.partial(sweep.run_locally, delay_backend=delay_backend))
            except Exception as e:  # noqa: BLE001 - sent back whole; the driver ends the sweep
                return {"machine": machine, "error": str(e) or type(e).__name__}
        return {"machine": machine, "status": status, "reason": reason, "source": here.spec.source,
                "run": run, "name": os.path.basename(run) if run else None,
                "tar": pack(run) if run else None}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def scratch_root(path=None):
    """The folder scratch folders go in (SCRATCH_ROOT), made ours alone if
    missing.  Anyone may make a folder under /var/tmp first, so one that is
    not a folder of ours that no one else can write to is refused: its
    owner could swap the topology a task runs or the results it returns."""
    path = path or SCRATCH_ROOT
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a folder"
        raise ClusterError(f"{path} is {kind} owned by uid {st.st_uid} with mode "
                           f"{stat.S_IMODE(st.st_mode):o}; scratch runs need a folder of this user's "
                           f"that no one else can write to: remove it")
    return path


def _localized(planned, source_text, scratch, plugins):
    """The setting with its topo.yaml, the plug-ins it names by file
    ({driver's path: source}) and its run folder in this machine's scratch
    folder (the driver's paths may not exist here)."""
    import dataclasses
    with open(os.path.join(scratch, "topo.yaml"), "w") as f:
        f.write(source_text)
    moves = {}
    for i, (path, text) in enumerate(sorted(plugins.items())):
        os.makedirs(os.path.join(scratch, "plugins", str(i)))
        moves[path] = os.path.join(scratch, "plugins", str(i), os.path.basename(path))
        with open(moves[path], "w") as f:
            f.write(text)
    spec = relocated(dataclasses.replace(planned.spec, source=os.path.join(scratch, "topo.yaml")), moves)
    return dataclasses.replace(planned, spec=spec, folder=os.path.join(scratch, "runs"))


def pack(run_dir):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(run_dir, arcname=os.path.basename(run_dir))
    return buf.getvalue()


@contextlib.contextmanager
def _as_locally():
    """The run sees what a local one sees: no OMP_NUM_THREADS=1 that Ray put
    into its worker (agents inherit the environment and would compute on one
    thread), and SIGTERM unwinds like Ctrl-C so the run tears down."""
    saved_omp = os.environ.get("OMP_NUM_THREADS")
    if saved_omp is not None and "OMP_NUM_THREADS" not in _parent_environment():
        del os.environ["OMP_NUM_THREADS"]
    main = threading.current_thread() is threading.main_thread()
    saved_term = signal.signal(signal.SIGTERM, _interrupt) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGTERM, saved_term)
        if saved_omp is not None:
            os.environ["OMP_NUM_THREADS"] = saved_omp


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _parent_environment():
    """Names in the environment of the process that started this worker
    (Ray's raylet): what the machine's `ray start` was given."""
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            return {item.split(b"=", 1)[0].decode(errors="replace") for item in f.read().split(b"\0") if item}
    except OSError:
        return set()


def _own_tag():
    from testbed.emulation import state
    return f"{os.getpid()}.{state.start_time(os.getpid())}"


def remove_leftovers():
    """What an earlier task on this machine left when its worker was killed:
    its run's network (a state file whose runner was a Ray worker, now
    gone) and its scratch folder.  Runs started any other way are left to
    `testbed clean`."""
    from testbed.emulation import state
    if os.path.isdir(state.STATE_ROOT):
        for rid in os.listdir(state.STATE_ROOT):
            try:
                data = state.RunState.read(rid).data
            except (OSError, ValueError):
                continue
            runner = data.get("runner") or {}
            cmd = runner.get("cmd") or [""]
            if str(cmd[0]).startswith("ray::") and not state.matches(runner):
                state.remove_run(rid, data)
    if os.path.isdir(SCRATCH_ROOT) and not os.path.islink(SCRATCH_ROOT):
        for name in os.listdir(SCRATCH_ROOT):
            pid, _, start = name.split("-", 1)[0].partition(".")
            if pid.isdigit() and start.isdigit() and state.start_time(int(pid)) != int(start):
                shutil.rmtree(os.path.join(SCRATCH_ROOT, name), ignore_errors=True)

