"""The `testbed` commands: parse, call, print (the tables are tables.py's).

Errors a user can cause are one sentence on stderr and exit code 2 (bad
input) or 1 (the machine cannot do it); never a traceback.
"""

import contextlib
import os
import signal
import sys
import time

import click
from rich.console import Console

from testbed import spec as specmod
from testbed.cli import tables
from testbed.emulation.capability import DELAY_BACKENDS, CapabilityError
from testbed.spec.units import UnitError, parse_size, plural

# Not a terminal (a pipe, a log file): wide enough that tables do not wrap.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
EXIT_BAD_INPUT = 2
EXIT_CANNOT = 1
RUNS_ROOT = "results/runs"


def fail(message, code=EXIT_BAD_INPUT):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def load_spec(path, settings=()):
    """The validated Spec of a file, with `settings` (--set PATH=VALUE) applied."""
    from testbed.spec.overrides import assignment
    try:
        return specmod.load(path, [assignment(text) for text in settings])
    except specmod.SpecError as e:
        fail(f"{path}: {e}")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def tear_down_on_signals():
    """SIGTERM and SIGHUP unwind like Ctrl-C, so `finally` blocks clean up."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)


backend_option = click.option("--delay-backend", type=click.Choice(DELAY_BACKENDS), default="auto",
                              show_default=True,
                              help="what emulates delay and loss: kernel netem or the userspace "
                                   "delay line; auto takes netem where the kernel has it")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--draw", "picture", default=None, type=click.Path(dir_okay=False),
              help="also draw the topology into this picture (.png, .svg or .pdf)")
def validate(file, picture):
    """Check a topo.yaml and show what it describes."""
    from testbed.ui import draw

    spec = load_spec(file)
    if picture:
        problem = draw.check_target(picture)
        if problem:
            fail(problem)
    dcs = ", ".join(f"{d.name} ({plural(d.servers, 'server')}, {plural(d.workers, 'worker')})"
                    for d in spec.datacenters)
    out.print(f"[bold]{spec.name}[/]: {plural(len(spec.datacenters), 'data center')}: {dcs}")
    out.print(tables.links_table(spec, "WAN links"))
    exp = spec.experiment
    if exp:
        out.print(f"experiment: sync {exp.sync}, overlay {exp.overlay}, servers in {exp.server_dc}, "
                  f"{exp.workload} {exp.model}" + (f" on {exp.dataset}" if exp.dataset else "")
                  + (", probes on" if exp.probe else ""))
    search = spec.search
    if search:
        plan = search.params
        out.print(f"search: {plural(plan.tasks, 'task')} x {plural(plan.configs, 'configuration')}, "
                  f"eta {plan.eta}, {plural(plan.workers, 'worker')} per job on "
                  f"{plural(len(search.machines), 'host')} of {search.dc}, "
                  f"coflows scheduled by {search.policy}")
    if spec.dynamics:
        out.print(f"dynamics: {plural(len(spec.dynamics), 'scheduled change')}")
    out.print(f"{file}: valid")
    if picture:
        out.print(f"drawn: {draw.draw(spec, picture)}")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@backend_option
def net(file, delay_backend):
    """Bring the network up with a console to poke it; `exit` tears it down."""
    from testbed.emulation import network
    from testbed.emulation.netconsole import NetConsole

    spec = load_spec(file)
    tear_down_on_signals()
    emulated = _build(network, spec, delay_backend)
    try:
        out.print(f"network up: run {emulated.state.run_id}, delay by "
                  f"{emulated.backend.name} ({emulated.backend.description})")
        out.print(tables.links_table(spec, "WAN links"))
        NetConsole(emulated, sys.stdout).cmdloop()
    except KeyboardInterrupt:
        out.print("\ninterrupted")
    finally:
        emulated.stop()
        out.print("network torn down")


def _build(network, spec, delay_backend):
    try:
        return network.build(spec, delay_backend=delay_backend)
    except CapabilityError as e:
        fail(str(e), EXIT_CANNOT)
    except KeyboardInterrupt:
        fail("interrupted while building the network; everything it created was removed",
             EXIT_CANNOT)


@click.command()
def doctor():
    """Check this machine for everything the testbed needs, with a fix for each gap."""
    from testbed.emulation import capability

    checks = capability.checks()
    out.print(tables.doctor_table(checks))
    if any(c.essential and not c.ok for c in checks):
        fail("some essentials are missing; apply the fixes above", EXIT_CANNOT)
    out.print("ready to emulate")


span_cluster_option = click.option(
    "--cluster", "cluster_address", default=None, metavar="ADDRESS",
    help="spread the WAN over the machines of this Ray cluster (HEAD:6379, or auto) that offer "
         "the 'testbed' resource, whole DCs per machine")
place_option = click.option(
    "--place", "pins", multiple=True, metavar="DC=MACHINE",
    help="with --cluster: build this DC on this machine (its Ray address); repeatable, the "
         "other DCs are placed to keep the heaviest links inside one machine")


@contextlib.contextmanager
def _spanning(address, pins, spec):
    """(cluster, {dc: machine}) for a run or selftest over a cluster's
    machines, or (None, None) without --cluster; the cluster's node
    servers stop on leaving."""
    if address is None:
        if pins:
            fail("--place needs --cluster")
        yield None, None
        return
    from testbed.spanning import span
    from testbed.spanning.machines import Cluster
    from testbed.sweeps import cluster as sweeps_cluster
    why = span.refusal(spec)
    if why:
        fail(why)
    try:
        cluster = Cluster(address)
    except sweeps_cluster.AddressError as e:
        fail(str(e))
    except sweeps_cluster.ClusterError as e:
        fail(str(e), EXIT_CANNOT)
    tear_down_on_signals()      # ray.init put in a SIGTERM handler that exits without cleaning up
    try:
        try:
            machine_of = span.layout(spec, cluster, pins)
        except span.SpanError as e:
            fail(str(e))
        out.print(f"cluster {address}: " + "; ".join(
            f"{m}: {', '.join(dc for dc, owner in machine_of.items() if owner == m) or '-'}"
            for m in sorted(cluster.machines)))
        yield cluster, machine_of
    finally:
        cluster.close()


@click.command()
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@backend_option
@click.option("--seconds", default=5.0, show_default=True, help="length of each iperf3 run")
@span_cluster_option
@place_option
def selftest(file, delay_backend, seconds, cluster_address, pins):
    """Build a network (a 2-DC one, or FILE's) and check every WAN link's RTT
    and throughput against its configuration."""
    from testbed.emulation import capability
    from testbed.emulation import selftest as st
    from testbed.emulation.network import NetworkError

    spec = load_spec(file) if file else None
    tear_down_on_signals()
    try:
        capability.require_network_capabilities()
        with _spanning(cluster_address, pins, spec or st.default_spec()) as (cluster, machine_of), \
                out.status("measuring") as status:
            backend, results = st.run(spec, delay_backend, seconds,
                                      progress=lambda text: status.update(f"measuring {text}"),
                                      cluster=cluster, machine_of=machine_of)
    except CapabilityError as e:
        fail(str(e), EXIT_CANNOT)
    except NetworkError as e:
        fail(str(e), EXIT_CANNOT)
    except KeyboardInterrupt:
        fail("interrupted; the network was removed", EXIT_CANNOT)
    out.print(tables.selftest_table(results, f"selftest of {spec.name if spec else 'a 2-DC network'} "
                                             f"(delay backend: {backend})"))
    out.print(tables.selftest_note(results))
    if not all(r.ok for r in results):
        fail("the emulated links are off their configuration", EXIT_CANNOT)



@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@backend_option
@click.option("--runs", "runs_root", default=RUNS_ROOT, show_default=True,
              help="folder that receives the run folder")
@click.option("--console", "with_console", is_flag=True,
              help="a prompt during the run to change links and speeds (help lists the commands)")
@click.option("--ui", "with_ui", is_flag=True,
              help="serve a live page of the run on 127.0.0.1 (its address, with a token, is printed)")
@click.option("--ui-port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="the live page's port; 0 takes a free one")
@click.option("--set", "settings", multiple=True, metavar="PATH=VALUE",
              help="override one setting, e.g. --set experiment.lr=0.05 (repeatable; validated, "
                   "and recorded in the run folder)")
@span_cluster_option
@place_option
def run(file, delay_backend, runs_root, with_console, with_ui, ui_port, settings,
        cluster_address, pins):
    """Build the network, run the experiment, report, tear down."""
    from testbed.analysis import report as reportmod
    from testbed.emulation.network import NetworkError
    from testbed.run import runner

    spec = load_spec(file, settings)
    if spec.experiment is None and spec.search is None:
        fail(f"{file}: experiment: missing: add an experiment section to run (see "
             "topologies/quickstart.yaml) or a search section (see topologies/hpsearch.yaml)")
    if with_ui:
        _check_port(ui_port)
    tear_down_on_signals()
    live = out.status("starting") if out.is_terminal and not with_console else None

    def show(line):
        if with_console:
            return  # the prompt owns the terminal; `show links` / `show probe` ask
        if live is not None:
            live.update(line)
        elif time.monotonic() - show.last >= 5:
            click.echo(line)
            show.last = time.monotonic()
    show.last = 0.0
    restore = _save_terminal() if with_console else (lambda: None)
    try:
        with _spanning(cluster_address, pins, spec) as (cluster, machine_of):
            if live is not None:
                live.start()
            outcome = runner.run(spec, runs_root, delay_backend, show=show, say=click.echo,
                                 overrides=list(settings),
                                 on_folder=lambda f: click.echo(f"run folder: {f.path}"),
                                 console=_start_console if with_console else None,
                                 ui=_live_page(ui_port) if with_ui else None,
                                 cluster=cluster, machine_of=machine_of)
    except CapabilityError as e:
        fail(str(e), EXIT_CANNOT)
    except runner.RunError as e:
        fail(str(e))
    except NetworkError as e:
        fail(str(e), EXIT_CANNOT)
    finally:
        if live is not None:
            live.stop()
        restore()
    summary = outcome.folder.read_json("summary.json", {})
    out.print(tables.summary_table(summary, f"run {os.path.basename(outcome.folder.path)}"))
    plots = dict.fromkeys(reportmod.PLOTS + reportmod.search_report.PLOTS + reportmod.programs_report.PLOTS)
    out.print("plots: " + ", ".join(outcome.folder.file(p) for p in plots
                                    if os.path.exists(outcome.folder.file(p))))
    if outcome.status != "completed":
        fail(f"the run failed: {outcome.reason}", EXIT_CANNOT)


def _check_port(port):
    """A taken --ui-port is the user's to fix, before anything is built."""
    import socket

    from testbed.ui.server import HOST
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError as e:
            fail(f"--ui-port {port}: cannot listen on {HOST}:{port} ({e.strerror or e})")


def _live_page(port):
    def start(commands):
        from testbed.ui.server import LiveServer
        page = LiveServer(commands, port).start()
        click.echo(f"live page: {page.url}")
        return page
    return start


def _start_console(commands):
    import threading

    from testbed.run.control import RunConsole

    # A daemon thread: when the run ends, the process leaves without waiting for input.
    threading.Thread(target=RunConsole(commands, sys.stdout).cmdloop, daemon=True,
                     name="console").start()


def _save_terminal():
    """The console's line editing changes terminal modes; put them back at the end."""
    try:
        import termios
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        return lambda: None
    return lambda: termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@click.command()
@click.argument("command", nargs=-1, required=True)
@click.option("--run", "run_dir", type=click.Path(file_okay=False), default=None,
              help="the running experiment's folder (default: the newest run)")
def inject(command, run_dir):
    """Send a command to a running experiment, e.g. `link a b bw=5mbit`."""
    from testbed.emulation.commands import CommandError
    from testbed.records.runfolder import newest_run
    from testbed.run.control import inject as send

    run_dir = _run_dir(run_dir or newest_run(RUNS_ROOT) or fail(f"no runs in {RUNS_ROOT}"))
    try:
        ok, text = send(run_dir, " ".join(command))
    except CommandError as e:
        fail(str(e), EXIT_CANNOT)
    except OSError as e:
        fail(f"cannot reach the experiment in {run_dir}: {e.strerror or e}", EXIT_CANNOT)
    if not ok:
        fail(text)
    click.echo(text)


def _run_dir(path):
    from testbed.records.runfolder import is_run_folder
    if not is_run_folder(path):
        fail(f"{path} is not a run folder (it has no status.json and agents/)")
    return path


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False), required=False)
@click.option("--html", "with_html", is_flag=True,
              help="also write report.html: a page that replays the run, self-contained")
def report(run_dir, with_html):
    """Summarize a run folder (the newest by default) and draw its plots."""
    from testbed.analysis import report as reportmod
    from testbed.records.runfolder import newest_run

    run_dir = _run_dir(run_dir or newest_run(RUNS_ROOT) or fail(f"no runs in {RUNS_ROOT}"))
    summary, plots = reportmod.report(run_dir)
    out.print(tables.summary_table(summary, f"run {os.path.basename(os.path.normpath(run_dir))}"))
    out.print("plots: " + ", ".join(plots))
    if with_html:
        from testbed.ui.page import write_report
        out.print(f"page: {write_report(run_dir)}")


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", "out_dir", default=None, help="folder for compare.csv and compare.png")
def compare(run_dirs, out_dir):
    """Put several runs side by side: one table, one plot."""
    from testbed.analysis import report as reportmod

    for d in run_dirs:
        _run_dir(d)
    out_dir = out_dir or os.path.join(RUNS_ROOT, "compare-" + time.strftime("%Y%m%d-%H%M%S"))
    rows = reportmod.compare(run_dirs, out_dir)
    out.print(tables.compare_table(rows, reportmod.COMPARE_COLUMNS))
    out.print(f"written: {os.path.join(out_dir, 'compare.csv')}, {os.path.join(out_dir, 'compare.png')}")


def _progress_bar():
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=out)


cluster_option = click.option(
    "--cluster", "cluster_address", default=None, metavar="ADDRESS",
    help="run each setting as a task on this Ray cluster (HEAD:6379, or auto), one per machine "
         "that offers the 'testbed' resource")


@contextlib.contextmanager
def _executor(address, delay_backend):
    """How a sweep's settings run: here one after another (None), or as
    tasks on a Ray cluster, which the sweep joins and leaves."""
    if address is None:
        try:
            yield None
        except KeyboardInterrupt:
            fail("interrupted: the running setting was torn down; the same command resumes "
                 "where it stopped", EXIT_CANNOT)
        return
    from testbed.sweeps import cluster
    try:
        units = cluster.connect(address)
    except cluster.AddressError as e:
        fail(str(e))
    except cluster.ClusterError as e:
        fail(str(e), EXIT_CANNOT)
    tear_down_on_signals()      # ray.init put in a SIGTERM handler that exits without cleaning up
    out.print(f"cluster {address}: {units} machine(s) offer the '{cluster.RESOURCE}' resource")
    try:
        yield cluster.executor(delay_backend)
    except cluster.ClusterError as e:
        fail(str(e), EXIT_CANNOT)
    except KeyboardInterrupt:
        fail("interrupted: the cluster's tasks were cancelled and their networks torn down",
             EXIT_CANNOT)
    finally:
        cluster.disconnect()


@click.command()
@click.argument("recipe_file", type=click.Path(dir_okay=False))
@click.option("--quick", is_flag=True, help="the recipe's scaled-down version")
@backend_option
@click.option("--runs", "runs_root", default=RUNS_ROOT, show_default=True)
@cluster_option
def sweep(recipe_file, quick, delay_backend, runs_root, cluster_address):
    """Run a recipe's cross product of settings, one experiment at a time;
    re-running skips settings already completed."""
    from testbed.sweeps import reproduce as rep
    from testbed.sweeps.sweep import RecipeError, load_recipe, run_locally, run_sweep

    try:
        recipe = load_recipe(recipe_file, quick=quick)
    except RecipeError as e:
        fail(str(e))
    tear_down_on_signals()
    sweep_dir = os.path.join(runs_root, "sweeps", recipe.id + ("-quick" if quick else ""))
    with _executor(cluster_address, delay_backend) as execute, _progress_bar() as bar:
        task = bar.add_task(recipe.id, total=len(recipe.settings()))
        try:
            record = run_sweep(recipe, sweep_dir,
                               lambda planned: run_locally(planned, delay_backend, out.print),
                               lambda done, total, text: bar.update(task, completed=done,
                                                                    description=f"{recipe.id}: {text}"),
                               execute)
        except RecipeError as e:
            fail(str(e))
        except CapabilityError as e:
            fail(str(e), EXIT_CANNOT)
    out.print(tables.sweep_table(rep.rows_of(record), f"sweep {recipe.id} ({sweep_dir})"))


@click.command()
@click.argument("recipe_id", required=False)
@click.option("--quick", is_flag=True, help="a scaled-down sweep that finishes in minutes")
@click.option("--list", "list_recipes", is_flag=True, help="list the recipes")
@click.option("--out", "out_dir", default=None, help="where the figure and table go")
@backend_option
@click.option("--runs", "runs_root", default=RUNS_ROOT, show_default=True)
@cluster_option
def reproduce(recipe_id, quick, list_recipes, out_dir, delay_backend, runs_root, cluster_address):
    """Run a figure recipe from results/ and redraw its figure."""
    from testbed.sweeps import reproduce as rep
    from testbed.sweeps.sweep import RecipeError

    if list_recipes or not recipe_id:
        for rid, title in rep.recipes():
            out.print(f"{rid:20} {title}")
        return
    try:
        rep.recipe_path(recipe_id)          # a bad ID is refused before any progress bar
    except RecipeError as e:
        fail(str(e))
    tear_down_on_signals()
    with _executor(cluster_address, delay_backend) as execute, _progress_bar() as bar:
        task = bar.add_task(recipe_id, total=None)
        try:
            rows, files = rep.reproduce(
                recipe_id, quick, runs_root, out_dir, delay_backend, say=out.print,
                progress=lambda done, total, text: bar.update(task, completed=done, total=total,
                                                              description=f"{recipe_id}: {text}"),
                execute=execute)
        except RecipeError as e:
            fail(str(e))
        except CapabilityError as e:
            fail(str(e), EXIT_CANNOT)
    out.print(tables.sweep_table(rows, f"{recipe_id}{' (quick)' if quick else ''}"))
    out.print("written: " + ", ".join(files))


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model-bytes", "model_bytes", metavar="SIZE",
              help="what each DC contributes per sync: bytes, or a size as topo.yaml writes it (44mb, 1mib)")
@click.option("--json", "as_json", is_flag=True, help="print {t_cut, t_lb, t_opt} as JSON")
def bound(file, model_bytes, as_json):
    """One synchronization's cut bound, partial-sum lower bound and best tree packing."""
    import json
    import math

    from testbed import bounds

    if model_bytes is None:
        fail("testbed bound needs --model-bytes SIZE, what each DC contributes per sync")
    try:
        size = float(model_bytes)
    except ValueError:
        try:
            size = float(parse_size(model_bytes))     # topo.yaml's sizes
        except UnitError:
            size = math.nan
    if not (math.isfinite(size) and size > 0):
        fail(f"--model-bytes needs a size above zero like 44mb or 44mib (units b, kb, mb, gb, kib, "
             f"mib, gib) or a number of bytes, not {model_bytes!r}")
    wan = bounds.wan_of(load_spec(file))
    if not wan.reachable():
        fail(f"{file}: the WAN does not join every data center with workers")
    times = {"t_cut": bounds.t_cut(wan, size), "t_lb": bounds.t_lb(wan, size),
             "t_opt": bounds.t_opt(wan, size)}
    if as_json:
        click.echo(json.dumps(times))
        return
    out.print(tables.bounds_table(times, size))


def _policy_params(pairs):
    """--param KEY=VALUE pairs: a number where the text is one, else the text."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--param takes KEY=VALUE, not {pair!r}")
        try:
            number = float(value)
            params[key] = int(number) if number.is_integer() and "." not in value else number
        except ValueError:
            params[key] = value
    return params


def _coflow_policies():
    from agents.coflow.policies import COFLOW
    return ", ".join(COFLOW.names())


@click.command("coflow-sim")
@click.argument("trace_file", type=click.Path(dir_okay=False))
@click.option("--policy", required=True, help=f"a coflow policy: {_coflow_policies()}, or module:Class")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="a policy parameter, e.g. percentile=80 or reorder=events")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def coflow_sim(trace_file, policy, params, as_json):
    """Simulate a coflow trace on a big switch under a scheduling policy."""
    import json

    from agents.plugins import OptionError
    from testbed.coflow.report import simulate_trace
    from testbed.coflow.trace import read_trace
    from testbed.spec.textfile import TextFileError

    try:
        trace = read_trace(trace_file)
    except TextFileError as e:
        fail(str(e))
    except ValueError as e:
        fail(f"{trace_file}: {e}")
    try:
        result = simulate_trace(trace, policy, **_policy_params(params))
    except OptionError as e:
        fail(f"--param {e.key}: {e.message}" if e.key else e.message)
    except ValueError as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    out.print(f"order: {' '.join(str(c) for c in result['order'])}")
    for key, name in (("cct", "CCT"), ("sct", "SCT")):
        if key in result:
            out.print(f"{name}: " + ", ".join(f"{k} {v:g}" for k, v in result[key].items()))
            out.print(f"average {name}: {result['avg_' + key]:g}  (lower bound "
                      f"{result['lower_bound']['avg_' + key]:g})")


@click.command()
@click.option("--all", "include_running", is_flag=True,
              help="also remove runs whose runner is still alive")
def clean(include_running):
    """Remove what crashed or killed runs left behind (namespaces, links, processes)
    and mark their run folders killed."""
    from testbed.emulation import capability, state

    if not capability.is_root():
        fail("testbed clean needs root: run it with sudo", EXIT_CANNOT)
    report, skipped = state.clean(include_running)
    for rid, removed in report.items():
        out.print(f"run {rid}: stopped {plural(removed['processes'], 'process')}, removed "
                  f"{plural(len(removed['links']), 'link')}"
                  + (f"; {removed['run_dir']} marked killed" if removed.get("killed") else ""))
    for rid in sorted(skipped):
        out.print(f"run {rid}: still running; left alone (use --all to remove it)")
    if not report:
        out.print("nothing to clean")


@click.command()
@click.option("--kind", type=click.Choice(["sync", "overlay", "coflow", "workload", "model",
                                           "dataset", "metric"]), help="only this kind")
@click.option("--options/--no-options", default=True, show_default=True,
              help="list every plug-in's options too")
def plugins(kind, options):
    """List the built-in and installed plug-ins by kind, with their options."""
    from agents.plugins import PluginError
    from testbed.docs.systems import KINDS

    for registry, heading, named, _ in KINDS:
        if kind and registry.kind != kind:
            continue
        out.print(f"[bold]{heading}[/] ({named})")
        installed = registry.entry_points()
        for name in registry.names():
            where = "built in" if name in registry.builtins else f"from {installed[name].value}"
            try:
                cls, _ = registry.load(name)
            except PluginError as e:
                out.print(f"  {name}  [red]cannot be loaded[/]: {e}")
                continue
            out.print(f"  [bold]{name}[/]  {cls.DESCRIPTION}  [dim]({where})[/]")
            for o in cls.OPTIONS if options else ():
                default = "unset" if o.default is None else o.default
                out.print(f"      {o.name} = {default}  [dim]{o.values()}[/]  {o.help}")
        out.print("")
    out.print("Name a plug-in that is neither by module:Class, or by its file: ./my_sync.py:Scheme")


@click.command()
def schema():
    """Print a JSON Schema (draft 2020-12) of topo.yaml, for an editor or check-jsonschema."""
    from testbed.docs.pages import schema_page

    click.echo(schema_page(), nl=False)


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--parquet", "out_dir", metavar="DIR", help="write each table as DIR/TABLE.parquet")
@click.option("--csv", "csv_dir", metavar="DIR", help="write each table as DIR/TABLE.csv")
def export(run_dir, out_dir, csv_dir):
    """Write a run's records as tables (iterations, evaluations, links, ...)."""
    from testbed.api import Run

    if not out_dir and not csv_dir:
        fail("testbed export needs --parquet DIR or --csv DIR")
    try:
        run = Run(_run_dir(run_dir))
    except FileNotFoundError as e:
        fail(str(e))
    for target, fmt in ((out_dir, "parquet"), (csv_dir, "csv")):
        if target:
            try:
                paths = run.export(target, fmt)
            except ImportError:
                fail("parquet files need pyarrow: pip install pyarrow (or use --csv)", EXIT_CANNOT)
            out.print(f"wrote {len(paths)} tables to {target}")


# Every `testbed` command; the group in __init__.py adds them.
COMMANDS = (validate, net, doctor, selftest, run, inject, report, compare, sweep, reproduce, bound,
            coflow_sim, plugins, schema, export, clean)
