"""One experiment's life: build the network, launch the agents, watch them,
collect, and always tear down.

Agents run as `python -m agents ROLE --config FILE` inside their hosts and
write their events to the run folder; the runner only reads those files,
samples the links and watches the processes.  A dead agent stops the run
within a poll interval, with its name and the end of its log.
"""

import importlib.metadata
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from agents.config import AgentConfig, Peer, ProbeSection, Transport, ViewSection, WorkloadSettings
from agents.events import EventLog, EventTail, read_events
from agents.launcher import Launcher
from agents.overlay.layout import Layout
from testbed.analysis import report
from testbed.emulation import network
from testbed.emulation.network import describe_exit
from testbed.emulation.plan import shortest_next_hops
from testbed.emulation.shield import signals_deferred
from testbed.records.runfolder import RunFolder
from testbed.run import control, dynamics, programs, provenance, runend, search
from testbed.run.linksampler import LinkSampler
from testbed.spanning import span
from testbed.spanning.network import SpanningNetwork
from testbed.spec.units import plural

log = logging.getLogger(__name__)
AGENT_PORT = 7000
# The agents whose end ends the run: an experiment's workers, a search's machines, programs.
ENDS_RUN = ("worker", "machine", "program")
PROBE_PORT = 7100          # UDP trains and echoes; PUB on the next port
PROBE_LEAD = 2.0           # seconds from writing the probes' settings to their first period
COORDINATOR_PORT = 7200
POLL = 0.2
SERVER_GRACE = 10.0      # after the workers finish, servers get this long to exit
AGENT_STARTS = ("launcher", "popen")


class RunError(RuntimeError):
    """The experiment could not start or went wrong; the text says why."""


@dataclass
class Agent:
    name: str
    role: str
    proc: subprocess.Popen       # or the launcher's stand-in for one (agents.launcher.Agent)
    log_path: str


@dataclass
class Outcome:
    status: str            # completed | failed
    reason: str
    folder: RunFolder
    stopped_by: str = None       # target_accuracy | iterations | time | agent-failure | interrupted | error
    target_reached: bool = None  # None when the experiment has no target accuracy


def agent_configs(spec, net, folder):
    """One AgentConfig per server and worker of the experiment."""
    exp = spec.experiment
    # Every DC's servers: overlays that aggregate in the WAN use them as relays.
    servers = [Peer(h.name, h.ip, AGENT_PORT, h.dc) for h in net.plan.hosts if h.role == "server"]
    workers = [Peer(h.name, h.ip, AGENT_PORT, h.dc) for h in net.plan.hosts if h.role == "worker"]
    schedule, step_every, gamma, total = exp.lr_schedule
    workload = WorkloadSettings(kind=exp.workload, model=exp.model, dataset=exp.dataset,
                                data_dir=exp.data_dir, model_options=dict(exp.model_options or {}),
                                dataset_options=dict(exp.dataset_options or {}),
                                partition=exp.partition, batch_size=exp.batch_size,
                                lr=exp.lr, momentum=exp.momentum, optimizer=exp.optimizer,
                                weight_decay=exp.weight_decay, betas=list(exp.betas),
                                lr_schedule=schedule, lr_step_every=step_every, lr_gamma=gamma,
                                lr_total=total, loss=exp.loss, metrics=list(exp.metrics),
                                compute_time=exp.compute_time, step_time=exp.step_time,
                                eval_every=exp.eval_every, eval_period=exp.eval_period,
                                seed=exp.seed)
    transport = Transport(chunk_bytes=exp.chunk_bytes, dead_after=exp.dead_after)
    probes = probe_peers(spec, net)
    speeds = {}
    for dc in spec.datacenters:
        for i, s in enumerate(dc.compute):
            speeds[f"{dc.name}-w{i}"] = s
    # On the server DC's router: over the WAN like everything else, or, when
    # asked, from its address on the unshaped management network.
    coordinator_ip = (net.plan.management.port(exp.server_dc).ip if net.plan.management
                      else net.plan.router(exp.server_dc).ip)
    coordinator = Peer(f"{exp.server_dc}-c", coordinator_ip, COORDINATOR_PORT, exp.server_dc)
    layout = overlay_layout(spec, servers, workers).to_dict()
    configs = []
    for role, peers in (("server", servers), ("worker", workers)):
        for rank, p in enumerate(peers):
            configs.append(AgentConfig(
                name=p.name, role=role, dc=p.dc, host=p.host, port=p.port,
                events=folder.agent_file(p.name, "jsonl"), sync=exp.sync,
                sync_options=dict(exp.sync_options or {}), overlay=exp.overlay,
                servers=servers, workers=workers, rank=rank, speed=speeds.get(p.name, 1.0),
                max_iterations=exp.max_iterations, target_accuracy=exp.target_accuracy,
                workload=workload, transport=transport,
                speed_file=folder.agent_file(p.name, "speed") if role == "worker" else "",
                layout=layout, coordinator=coordinator))
    configs.append(AgentConfig(
        name=coordinator.name, role="coordinator", dc=coordinator.dc, host=coordinator.host,
        port=coordinator.port, events=folder.agent_file(coordinator.name, "jsonl"),
        sync=exp.sync, sync_options=dict(exp.sync_options or {}), overlay=exp.overlay,
        servers=servers, workers=workers, layout=layout,
        transport=transport, probes=probes, coordinator=coordinator,
        view=ViewSection(probe_pub_port=PROBE_PORT + 1)))
    return configs + probe_configs(spec, net, folder, configs)


def probe_configs(spec, net, folder, agents=()):
    """One probe AgentConfig per DC when the experiment asks for probes;
    each reads the transfers `agents` of its DC receive (passively)."""
    if not spec.experiment.probe:
        return []
    probes = probe_peers(spec, net)
    settings = probe_settings(spec, agents)
    return [AgentConfig(name=p.name, role="probe", dc=p.dc, host=p.host, port=p.port,
                        events=folder.agent_file(p.name, "jsonl"), rank=rank, probes=probes,
                        probe=ProbeSection(**settings, passive_events=[c.events for c in agents
                                                                       if c.dc == p.dc],
                                           link_intfs=links_into(net.plan, p.dc)))
            for rank, p in enumerate(probes)]


def overlay_layout(spec, servers, workers):
    """What the overlay plans from; the agents fill in the model's size."""
    exp = spec.experiment
    links = [[w.a, w.b, w.ab.rate, w.ba.rate, w.ab.delay, w.ba.delay] for w in spec.wan]
    return Layout(size=0, workers=[[p.name, p.dc] for p in workers],
                  servers=[[p.name, p.dc] for p in servers], server_dc=exp.server_dc,
                  dcs=[d.name for d in spec.datacenters], links=links,
                  options=dict(exp.overlay_options or {}), routes=router_paths(spec))


def router_paths(spec):
    """{"a>b": [a, ..., b]}: the path the emulated routers send a's packets
    to b along, for every ordered pair of DCs."""
    hops, out = shortest_next_hops(spec), {}
    for (src, dst) in hops:
        path = [src]
        while path[-1] != dst:
            path.append(hops[(path[-1], dst)])
        out[f"{src}>{dst}"] = path
    return out


def probe_peers(spec, net):
    """One probe per DC, on its router (its LAN address)."""
    return [Peer(f"{dc.name}-p", net.plan.router(dc.name).ip, PROBE_PORT, dc.name)
            for dc in spec.datacenters] if spec.experiment.probe else []


def links_into(plan, dc):
    """{neighbour DC: this DC's router interface its WAN link arrives on}."""
    out = {}
    for w in plan.wan:
        if w.b == dc:
            out[w.a] = w.intf_b
        elif w.a == dc:
            out[w.b] = w.intf_a
    return out


def probe_settings(spec, configs, probe=None):
    """Probe settings shared by all probes: every ordered DC pair with the
    link directions its route crosses (for the budget and the slots), the
    route's one-way delay plus jitter and its slowest configured rate (for
    the slots' width), the queue of its first link (the probe's router's
    own, which its trains must fit), and one epoch the probes count periods from.  With
    `pairs: neighbours`, only the pairs the routers send over one link.

    The epoch is CLOCK_MONOTONIC, a little ahead so the probes have started
    by then: every network namespace reads the same monotonic clock, and
    unlike the wall clock it never steps, so no probe skips or repeats a
    slot when the time is set.  `probe` defaults to the experiment's."""
    probe = probe or spec.experiment.probe
    paths = router_paths(spec)
    pairs = []
    for src in spec.datacenters:
        for dst in spec.datacenters:
            if src is dst:
                continue
            path = paths[f"{src.name}>{dst.name}"]
            if probe.pairs == "neighbours" and len(path) > 2:
                continue
            links = [list(link) for link in zip(path, path[1:])]
            ways = [spec.link(a, b).direction(a, b) for a, b in links]
            pairs.append({"src": src.name, "dst": dst.name, "links": links,
                          "delay": sum(d.delay + d.jitter for d in ways),
                          "rate": min(d.rate for d in ways), "queue": ways[0].queue})
    return {"period": probe.period, "budget": probe.budget, "steady_budget": probe.budget_when_steady,
            "train_time": probe.train_time,
            "epoch": time.monotonic() + PROBE_LEAD,
            "pub_port": PROBE_PORT + 1, "pairs": pairs, "agent_dcs": {c.name: c.dc for c in configs}}


def environment(net):
    import numpy
    env = {"delay_backend": net.backend.name, "delay_backend_description": net.backend.description,
           "delay_emulated": True, "kernel": platform.release(), "python": platform.python_version(),
           "cpus": os.cpu_count(), "numpy": numpy.__version__, "run_id": net.state.run_id,
           **{name: ", ".join(sorted(values)) for name, values in net.tcp_state().items()}}
    try:
        # Its version without importing it: that costs over a second of CPU
        # while the agents start.
        env["torch"] = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pass
    return env


def runner_event(folder, kind, **fields):
    """One event in the run folder's runner.jsonl."""
    events = EventLog(folder.file("runner.jsonl"), "runner")
    events(kind, **fields)
    events.close()


def agent_env(paths=()):
    """The agents' environment: the runner's, unbuffered, with `paths`
    (where a user's plug-ins are imported from) ahead on PYTHONPATH."""
    path = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)
    return {**os.environ, "PYTHONUNBUFFERED": "1", **({"PYTHONPATH": path} if path else {})}


def launch(net, configs, folder, launcher=None, env=None):
    """Start every agent in its host: forked by the launcher, or, without
    one, each its own interpreter through Mininet's popen."""
    agents, requests = [], []
    for cfg in configs:
        # A probe or the coordinator runs on its DC's router; every other agent on its own host.
        host = f"{cfg.dc}-r" if cfg.role in ("probe", "coordinator", "scheduler") else cfg.name
        if isinstance(net, SpanningNetwork) and cfg.probe is not None:
            # The probes' common epoch, on the clock of the machine this one runs on.
            cfg.probe.epoch += net.offset_of(host)
        path = folder.agent_file(cfg.name, "json")
        cfg.save(path)
        log_path = folder.agent_file(cfg.name, "log")
        if launcher is not None:
            requests.append({"name": cfg.name, "role": cfg.role, "config": path, "log": log_path,
                             "netns_pid": net.node(host).pid})
            continue
        if isinstance(net, SpanningNetwork):
            agents.append(Agent(cfg.name, cfg.role, launch_remote(net, cfg, host, path, log_path, env),
                                log_path))
            continue
        with open(log_path, "wb") as log:
            proc = net.node(host).popen(
                [sys.executable, "-m", "agents", cfg.role, "--config", path],
                stdout=log, stderr=subprocess.STDOUT, env=env or agent_env())
        net.state.note("pids", proc.pid)
        agents.append(Agent(cfg.name, cfg.role, proc, log_path))
    if launcher is not None:
        procs = launcher.start(requests)
        # The launcher too, now that it has spoken: just after exec its command line may be empty.
        net.state.note("pids", launcher.pid, *[p.pid for p in procs])
        agents = [Agent(r["name"], r["role"], p, r["log"]) for r, p in zip(requests, procs)]
    return agents


def launch_remote(net, cfg, host, path, log_path, env):
    """One agent on the machine of a spanning network that runs its host:
    its config sent there if the machine does not see the run folder,
    started by that machine's interpreter with only what the agents need
    of the environment."""
    keep = {k: v for k, v in (env or agent_env()).items() if k in ("PYTHONUNBUFFERED", "PYTHONPATH")}
    return net.start(host, ["-m", "agents", cfg.role, "--config", path], env=keep, log=log_path,
                     python=True, files=[path])


def log_tail(path, lines=8):
    try:
        with open(path, errors="replace") as f:
            return [line.rstrip() for line in f.readlines()[-lines:]]
    except OSError:
        return []


def stop_agents(agents, grace=3.0):
    for a in agents:
        if a.proc.poll() is None:
            a.proc.terminate()
    deadline = time.monotonic() + grace
    for a in agents:
        try:
            a.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            a.proc.kill()
            a.proc.wait()


class Progress:
    """The numbers the live progress line shows, fed from events and samples.

    An iteration can take minutes on a slow WAN, so the line also shows the
    bytes the WAN moved since the last iteration ended: the link rates
    integrated over the time between lines."""

    def __init__(self):
        self.iteration = 0
        self.loss = None
        self.accuracy = None
        self.sync = None
        self.moved = 0.0               # WAN bytes since the last iteration ended
        self.coflows = self.stages = 0  # a search's, from its scheduler
        self.programs = False           # a run of programs: no iterations of the testbed's
        self._shown_at = None

    def take(self, events):
        for e in events:
            if e["ev"] == "iter":
                if e["it"] + 1 > self.iteration:
                    self.moved = 0.0
                self.iteration = max(self.iteration, e["it"] + 1)
                self.sync = e["sync"]
                if e.get("loss") is not None:
                    self.loss = e["loss"]
            elif e["ev"] == "eval":
                self.accuracy = e["accuracy"]
            elif e["ev"] == "coflow_done":
                self.coflows += 1
            elif e["ev"] == "stage_done":
                self.stages += 1

    def line(self, elapsed, throughput):
        if self._shown_at is not None:
            self.moved += sum(throughput.values()) / 8 * max(0.0, elapsed - self._shown_at)
        self._shown_at = elapsed
        if self.programs:
            done = f"{self.moved / 1e6:.1f} MB moved"
        elif self.coflows or self.stages:
            done = f"{plural(self.stages, 'stage')}, {plural(self.coflows, 'coflow')} done"
        else:
            done = f"iter {self.iteration}, {self.moved / 1e6:.1f} MB moved"
        parts = [f"{elapsed:6.1f}s", done]
        if self.loss is not None:
            parts.append(f"loss {self.loss:.3f}")
        if self.accuracy is not None:
            parts.append(f"acc {self.accuracy:.3f}")
        if self.sync is not None:
            parts.append(f"sync {self.sync * 1e3:.0f}ms")
        links = " ".join(f"{s[:3]}>{d[:3]} {bps / 1e6:.1f}" for (s, d), bps in sorted(throughput.items()))
        if links:
            parts.append(f"WAN Mbit/s: {links}")
        return " | ".join(parts)


def watch(agents, max_time, folder, sampler, show, every_poll=lambda: None, health=lambda: None):
    """Until the workers (a search's machines) finish, an agent dies, the
    emulation fails (health() says why: a dead delay line, node shell or
    link sampler) or time runs out.  Returns what ended it (a runend
    constant) and, for a failure, why."""
    started = time.monotonic()
    # What the line shows comes from the first worker, or a search's scheduler
    # (programs log no events of the testbed's: their line shows the WAN alone).
    shown = next((a for a in agents if a.role in ("worker", "scheduler")), None)
    tail = EventTail(folder.agent_file(shown.name, "jsonl")) if shown else None
    progress = Progress()
    progress.programs = shown is None
    last_show = 0.0
    while True:
        failure = health()
        if failure:
            return runend.EMULATION_FAILURE, failure
        for a in agents:
            code = a.proc.poll()
            if code not in (None, 0):
                tail_lines = log_tail(a.log_path)
                program = a.role == "program"
                reason = f"{'the program on' if program else 'agent'} {a.name} {describe_exit(code)}"
                return runend.AGENT_FAILURE, reason + (
                    f"; its {'stderr' if program else 'log'} ends:\n  " + "\n  ".join(tail_lines)
                    if tail_lines else "")
        workers = [a for a in agents if a.role in ENDS_RUN]
        if all(a.proc.poll() == 0 for a in workers):
            servers = [a for a in agents if a.role == "server"]
            deadline = time.monotonic() + SERVER_GRACE
            while time.monotonic() < deadline and any(a.proc.poll() is None for a in servers):
                time.sleep(POLL)
            for a in servers:
                code = a.proc.poll()
                if code not in (None, 0):
                    return (runend.AGENT_FAILURE,
                            f"agent {a.name} {describe_exit(code)} after the workers finished")
            return runend.WORKERS_FINISHED, ""
        elapsed = time.monotonic() - started
        if elapsed > max_time:
            return runend.TIME, ""
        every_poll()
        if tail is not None:
            progress.take(tail.read())
        if time.monotonic() - last_show >= 0.5:
            show(progress.line(elapsed, sampler.latest))
            last_show = time.monotonic()
        time.sleep(POLL)


class SpeedSetter:
    """Changes workers' compute speed live: the worker reads its speed file
    every iteration; every change is stamped in speeds.jsonl.  Changes come
    from several threads (dynamics, console, page): one at a time, each
    written to a file of its own and renamed into place, so a worker never
    reads half of one and the file and speeds.jsonl end on the same value."""

    def __init__(self, folder):
        self.folder = folder
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def set(self, workers, speed, source):
        with self.lock:
            for w in workers:
                path = self.folder.agent_file(w, "speed")
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{w}.", suffix=".tmp")
                with os.fdopen(fd, "w") as f:
                    f.write(f"{speed!r}\n")
                os.replace(tmp, path)
            with open(self.folder.file("speeds.jsonl"), "a") as f:
                f.write(json.dumps({"t": round(time.monotonic() - self.started, 6), "wall": time.time(),
                                    "workers": list(workers), "speed": speed, "source": source}) + "\n")


def dynamics_engine(net, speeds, say):
    """The engine that replays a run's dynamics through the network's one
    live-change function and the speed setter."""
    return dynamics.Engine(
        link=lambda a: net.change_link(a.a, a.b, both=a.both, source="dynamics", **a.changes()),
        speed=lambda a: speeds.set(a.workers, a.speed, "dynamics"), report=say)


def write_report(folder, say):
    """The run's summary and plots; a Ctrl-C skips them (`testbed report`
    writes them later), an error in them is logged, never raised over why
    the run ended."""
    try:
        report.report(folder.path)
    except KeyboardInterrupt:
        say(f"the report was interrupted; `testbed report {folder.path}` writes it")
    except Exception:  # noqa: BLE001 - never hide why the run ended
        log.exception("the report of %s failed", folder.path)


def training_progress(folder):
    """(every test accuracy the workers logged, iterations the furthest
    worker finished), from the run folder's events."""
    accuracies, iterations = [], 0
    if not os.path.isdir(folder.agents):
        return accuracies, iterations
    for name in sorted(os.listdir(folder.agents)):
        if not name.endswith(".jsonl"):
            continue
        events = read_events(os.path.join(folder.agents, name))
        worker = any(e["ev"] == "start" and e.get("role") == "worker" for e in events)
        for e in events:
            if e["ev"] == "eval":
                accuracies.append(e["accuracy"])
            elif e["ev"] == "iter" and worker:
                iterations = max(iterations, e["it"] + 1)
    return accuracies, iterations


def scheduler_events(spec, folder):
    return read_events(folder.agent_file(f"{spec.search.dc}-c", "jsonl"))


def conclude(seen, detail, exp, folder):
    accuracies, iterations = training_progress(folder)
    return runend.conclude(seen, detail, accuracies, exp.target_accuracy, iterations,
                           exp.max_iterations, exp.max_time)


def start_programs(spec, net, folder):
    """A command workload's programs, started in their hosts: [(Process,
    Running, its stderr file)]."""
    exp = spec.experiment
    user = programs.user_of(exp.user)
    hosts = {h.name: (h.dc, h.ip, h.intf) for h in net.plan.hosts}
    try:
        started = programs.start(programs.plan(exp, hosts, folder, user[3]), net, folder, user,
                                 cwd=programs.workdir(spec))
    except programs.ProgramError as e:
        raise RunError(str(e)) from None
    runner_event(folder, "programs_started", hosts=[p.host for p, _, _ in started])
    return started


def run(spec, runs_root, delay_backend="auto", show=print, say=print, on_folder=lambda folder: None,
        console=None, agent_start="launcher", ui=None, overrides=(), source_text=None,
        cluster=None, machine_of=None):
    """Run the experiment of a Spec.  Returns an Outcome; the run folder is
    always left with its status, events, samples, summary and plots.  show() gets
    the progress line, say() messages; console(commands), if given, starts
    an interactive console once the agents run; ui(commands), if given,
    starts a page that watches and changes the run and returns it (its
    stop() is called at the end, whatever the end).  agent_start: "launcher"
    forks the agents from one interpreter that imported torch once;
    "popen" starts each as an interpreter of its own.  overrides: the
    --set PATH=VALUE texts the Spec was made with, recorded beside the
    file; source_text: the topology's text where it is not spec.source's
    (an experiment built in Python).  cluster, a
    testbed.spanning.machines.Cluster, builds the network over its
    machines, DC d on machine_of[d], each agent started where its host is."""
    if agent_start not in AGENT_STARTS:
        raise RunError(f"agent_start is {agent_start!r}, not one of {', '.join(AGENT_STARTS)}")
    if spec.experiment is None and spec.search is None:
        raise RunError("the topology has neither an experiment: nor a search: section, "
                       "so there is nothing to run")
    network.check_buildable(spec, delay_backend)  # before any folder is made
    if cluster is not None:
        why = span.refusal(spec)
        if why:
            raise RunError(why)
        agent_start = "popen"     # the launcher forks on its own machine only
    max_time = (spec.search or spec.experiment).max_time
    if source_text is None:
        with open(spec.source) as f:
            source_text = f.read()
    found = provenance.origins(spec)
    env = agent_env(provenance.import_roots(found))
    seen, detail = runend.ERROR, "the run did not start"
    folder = None
    agents, sampler, net, engine, server, launcher, page = [], None, None, None, None, None, None
    started, user, metrics = [], None, None
    if spec.experiment is not None and spec.experiment.programs:
        try:
            user = programs.user_of(spec.experiment.user)
        except programs.ProgramError as e:
            raise RunError(str(e)) from None
    try:
        # Made whole inside this try (a Ctrl-C meanwhile is ignored), so the
        # finally below always closes a folder that says `running`.
        with signals_deferred():
            folder = RunFolder.create(runs_root, spec, source_text)
        on_folder(folder)
        folder.write_json("plugins.json", [o.to_dict() for o in found])
        if overrides:
            folder.write_json("overrides.json", list(overrides))
        runner_event(folder, "starting", agent_start=agent_start)
        if agent_start == "launcher":
            # First: its imports (seconds of CPU) then overlap with building the network.
            launcher = Launcher(folder.file("launcher.log"), env=env)
        if cluster is None:
            net = network.build(spec, delay_backend=delay_backend, link_log=folder.links,
                                run_dir=folder.path)
        else:
            net = span.build(spec, cluster, machine_of, delay_backend, folder.links, folder.path,
                             text=source_text, overrides=overrides)
            say("machines: " + "; ".join(f"{m}: {', '.join(sorted(s.dcs))}"
                                         for m, s in net.shares.items()))
        runner_event(folder, "network_up", run_id=net.state.run_id, agent_start=agent_start)
        folder.write_json("env.json", environment(net))
        say(f"network up (run {net.state.run_id}); delay by {net.backend.name}: "
            f"{net.backend.description}")
        sampler = LinkSampler(net, folder.link_samples, cpu_path=folder.cpu_samples).start()
        speeds = SpeedSetter(folder)
        engine = dynamics_engine(net, speeds, say)
        commands = control.Commands(net, engine, speeds.set, folder.path,
                                    base_dir=os.path.dirname(spec.source))
        server = control.ControlServer(commands, folder.path).start()
        if ui:
            page = ui(commands)
        if spec.search:
            configs = search.agent_configs(spec, net, folder, AGENT_PORT, COORDINATOR_PORT)
        elif spec.experiment.programs:
            configs = probe_configs(spec, net, folder)
        else:
            configs = agent_configs(spec, net, folder)
        agents = launch(net, configs, folder, launcher, env) if configs else []
        if spec.experiment is not None and spec.experiment.programs:
            started = start_programs(spec, net, folder)
            agents += [Agent(p.host, "program", r, err) for p, r, err in started]
        # Dynamics times count from here: the moment the agents start.
        engine.run(spec.dynamics, horizon=max_time)
        if console:
            console(commands)
        metrics = programs.MetricsTail(folder, started) if started else None
        seen, detail = watch(agents, max_time, folder, sampler, show,
                             metrics.collect if metrics else (lambda: None),
                             health=lambda: net.failure() or sampler.failure())
    except KeyboardInterrupt:
        if folder is None:
            raise
        seen, detail = runend.INTERRUPTED, "interrupted by the user"
    except BaseException as e:
        seen, detail = runend.ERROR, f"{type(e).__name__}: {e}"
        raise
    finally:
        if folder is not None:
            with signals_deferred():
                for part in (engine, server, page):
                    if part:
                        part.stop()
                stop_agents(agents)
                if started:
                    programs.record(folder, started, user[0])
                if metrics:
                    metrics.collect()            # what the programs wrote at their very end
                if launcher:
                    launcher.close()
                if sampler:
                    sampler.stop()
                if net is not None:
                    net.stop()
                if spec.search:
                    end = search.conclude(seen, detail, scheduler_events(spec, folder), max_time)
                elif started:
                    end = programs.conclude(seen, detail, max_time, started)
                else:
                    end = conclude(seen, detail, spec.experiment, folder)
                folder.set_status(end.status, end.reason, stopped_by=end.stopped_by,
                                  target_reached=end.target_reached)
            # Not shielded: the run is closed, and a slow plot must not make Ctrl-C wait.
            write_report(folder, say)
    return Outcome(end.status, end.reason, folder, end.stopped_by, end.target_reached)
