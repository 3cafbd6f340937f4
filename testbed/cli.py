"""The `testbed` command: parse, call, print.

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
from rich.table import Table

from testbed.records import cpu
from testbed import spec as specmod
from testbed.emulation.capability import DELAY_BACKENDS, CapabilityError
from testbed.spec.units import format_rate, format_time

# Not a terminal (a pipe, a log file): wide enough that tables do not wrap.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
EXIT_BAD_INPUT = 2
EXIT_CANNOT = 1


def fail(message, code=EXIT_BAD_INPUT):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def load_spec(path):
    try:
        return specmod.load(path)
    except specmod.SpecError as e:
        fail(f"{path}: {e}")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def tear_down_on_signals():
    """SIGTERM and SIGHUP unwind like Ctrl-C, so `finally` blocks clean up."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)


def links_table(spec, title):
    table = Table(title=title, title_justify="left")
    for col in ("link", "direction", "rate", "delay", "jitter", "loss", "queue"):
        table.add_column(col)
    for link in spec.wan:
        for src, dst, d in ((link.a, link.b, link.ab), (link.b, link.a, link.ba)):
            table.add_row(link.name + (f" ({link.preset})" if link.preset else ""),
                          f"{src} -> {dst}", format_rate(d.rate), format_time(d.delay),
                          format_time(d.jitter), f"{d.loss * 100:g}%", f"{d.queue} B")
    return table


backend_option = click.option("--delay-backend", type=click.Choice(DELAY_BACKENDS), default="auto",
                              show_default=True,
                              help="what emulates delay and loss: kernel netem or the userspace "
                                   "delay line; auto takes netem where the kernel has it")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """geo-testbed: emulated WANs for distributed machine learning."""


@main.command()
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
    dcs = ", ".join(f"{d.name} ({d.servers} servers, {d.workers} workers)" for d in spec.datacenters)
    out.print(f"[bold]{spec.name}[/]: {len(spec.datacenters)} data centers: {dcs}")
    out.print(links_table(spec, "WAN links"))
    exp = spec.experiment
    if exp:
        out.print(f"experiment: sync {exp.sync}, overlay {exp.overlay}, servers in {exp.server_dc}, "
                  f"{exp.workload} {exp.model}" + (f" on {exp.dataset}" if exp.dataset else "")
                  + (", probes on" if exp.probe else ""))
    search = spec.search
    if search:
        out.print(f"search: {search.tasks} tasks x {search.configs} configurations, eta {search.eta}, "
                  f"{search.workers} workers per job on {len(search.machines)} hosts of {search.dc}, "
                  f"coflows scheduled by {search.policy}")
    if spec.dynamics:
        out.print(f"dynamics: {len(spec.dynamics)} scheduled changes")
    out.print(f"{file}: valid")
    if picture:
        out.print(f"drawn: {draw.draw(spec, picture)}")


@main.command()
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
        out.print(links_table(spec, "WAN links"))
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


@main.command()
def doctor():
    """Check this machine for everything the testbed needs, with a fix for each gap."""
    from testbed.emulation import capability

    table = Table(title="testbed doctor", title_justify="left")
    for col in ("check", "status", "detail", "fix"):
        table.add_column(col)
    bad = False
    for c in capability.checks():
        status = "[green]ok[/]" if c.ok else ("[red]missing[/]" if c.essential else "[yellow]warn[/]")
        bad |= c.essential and not c.ok
        table.add_row(c.name, status, c.detail, "" if c.ok else c.fix)
    out.print(table)
    if bad:
        fail("some essentials are missing; apply the fixes above", EXIT_CANNOT)
    out.print("ready to emulate")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@backend_option
@click.option("--seconds", default=5.0, show_default=True, help="length of each iperf3 run")
def selftest(file, delay_backend, seconds):
    """Build a network (a 2-DC one, or FILE's) and check every WAN link's RTT
    and throughput against its configuration."""
    from testbed.emulation import selftest as st
    from testbed.emulation import capability

    spec = load_spec(file) if file else None
    tear_down_on_signals()
    try:
        capability.require_network_capabilities()
        with out.status("measuring") as status:
            backend, results = st.run(spec, delay_backend, seconds,
                                      progress=lambda text: status.update(f"measuring {text}"))
    except CapabilityError as e:
        fail(str(e), EXIT_CANNOT)
    except KeyboardInterrupt:
        fail("interrupted; the network was removed", EXIT_CANNOT)
    relays = any(r.relay_cpu is not None for r in results)
    table = Table(title=f"selftest of {spec.name if spec else 'a 2-DC network'} "
                        f"(delay backend: {backend})", title_justify="left")
    for col in ("measurement", "expected", "measured", "measured/expected", "ok") + \
            (("relay CPU",) if relays else ()):
        table.add_column(col)
    for r in results:
        show = (lambda v: f"{v * 1e3:.2f} ms") if r.unit == "s" else (lambda v: f"{v / 1e6:.2f} Mbit/s")
        row = [r.what, show(r.expected), show(r.measured), f"{r.ratio:.3f}",
               "[green]yes[/]" if r.ok else "[red]no[/]"]
        if relays:
            row.append("" if r.relay_cpu is None else f"{r.relay_cpu * 100:.1f}%")
        table.add_row(*row)
    out.print(table)
    out.print("expected goodput = wire rate x 1448/1514 (TCP payload per full frame); "
              "expected RTT = sum of both one-way delays"
              + ("; relay CPU = the delay line process's share of one core while that "
                 "direction runs at full rate (the compiled one is one process for all links)"
                 if relays else ""))
    if not all(r.ok for r in results):
        fail("the emulated links are off their configuration", EXIT_CANNOT)


RUNS_ROOT = "results/runs"


FORMATS = {"s": lambda v: f"{v:.2f}s", "ms": lambda v: f"{v * 1e3:.0f}ms",
           "frac": lambda v: f"{v:.3f}", "int": str}


def _fmt(value, kind):
    if value is None:
        return "-"
    if isinstance(value, dict) and "name" in value:      # a recipe's variant
        return str(value["name"])
    if isinstance(value, (int, float)) and not isinstance(value, bool) and kind in FORMATS:
        return FORMATS[kind](value)
    return str(value)


def _fmt_mbit(rate):
    return "-" if rate is None else f"{rate / 1e6:.4g} Mbit/s"


def status_line(summary):
    """e.g. `completed, stopped by iterations, target not reached`."""
    parts = [str(summary["status"])]
    if summary.get("stopped_by"):
        parts.append(f"stopped by {summary['stopped_by']}")
    if summary.get("target_reached") is not None:
        parts.append("target reached" if summary["target_reached"] else "target not reached")
    return ", ".join(parts)


def search_table(summary, title):
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    s = summary["search"]
    bound = s["lower_bound"]
    pacing = (f"{s['pacing_flows']} flows at one rate: measured / given median "
              f"{_fmt(s['pacing_median'], 'frac')}, farthest {_fmt(s['pacing_worst'], 'frac')}"
              if s["pacing_flows"] else "no paced flow kept one rate")
    for label, value in (
            ("status", status_line(summary)),
            ("why", summary.get("reason") or ""),
            ("search", f"policy {s['policy']}, {s['stages']} stages, {s['coflows']} coflows"),
            ("wall time", _fmt(summary["wall_time"], "s")),
            ("average SCT", f"{_fmt(s['avg_sct'], 's')}, "
                            f"{_fmt(s.get('avg_sct_over_bound'), 'frac')} x the lower bound "
                            f"{_fmt(bound.get('avg_sct'), 's')}"),
            ("average CCT", f"{_fmt(s['avg_cct'], 's')} (lower bound {_fmt(bound.get('avg_cct'), 's')})"),
            ("makespan", ", ".join(f"{t} {_fmt(v, 's')}" for t, v in sorted(s["makespan"].items()))),
            ("pacing", pacing)):
        table.add_row(label, value)
    return table


def _bounds_as_run_line(summary):
    if summary.get("sync_t_lb_as_run") is not None:
        return (f"{_fmt(summary.get('sync_over_t_lb_as_run'), 'frac')} x t_lb of the links as they were "
                f"while each synchronization ran (median {_fmt(summary['sync_t_lb_as_run'], 'ms')}), "
                f"{_fmt(summary.get('sync_from_last_start_over_t_lb_as_run'), 'frac')} x from the last start")
    return "the links stayed as configured" if not summary.get("link_changes") else "-"


def summary_table(summary, title):
    if "search" in summary:
        return search_table(summary, title)
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    b = summary["iteration_breakdown"]
    for label, value in (
            ("status", status_line(summary)),
            ("why", summary["reason"].splitlines()[0] if summary.get("reason") else "-"),
            ("system", f"sync {summary['sync']}, overlay {summary['overlay']}, "
                       f"{summary['workload']} {summary['model']}, {summary['workers']} workers"),
            ("iterations", _fmt(summary["iterations"], "int") if summary["iterations"]
             else "none finished"),
            ("wall time", _fmt(summary["wall_time"], "s")),
            ("iteration time", f"{_fmt(summary['iteration_time'], 'ms')} = compute "
                               f"{_fmt(b['compute'], 'ms')} + communication {_fmt(b['comm'], 'ms')} "
                               f"+ waiting {_fmt(b['wait'], 'ms')}"),
            ("sync time", f"{_fmt(summary['sync_time'], 'ms')} per iteration, "
                          f"{_fmt(summary['sync_over_bound'], 'frac')} x the WAN's lower bound "
                          f"{_fmt(summary['sync_bound'], 'ms')}"),
            ("sync bounds", f"{_fmt(summary.get('sync_over_t_lb'), 'frac')} x the partial-sum lower "
                            f"bound t_lb {_fmt(summary.get('sync_t_lb'), 'ms')} of the links as "
                            f"configured; the best tree "
                            f"packing t_opt takes {_fmt(summary.get('sync_t_opt'), 'ms')}"),
            ("sync from the last start", f"{_fmt(summary.get('sync_from_last_start'), 'ms')} per "
                                         f"iteration from when the last worker began, "
                                         f"{_fmt(summary.get('sync_from_last_start_over_t_lb'), 'frac')}"
                                         f" x t_lb"),
            ("sync bounds while it ran", _bounds_as_run_line(summary)),
            ("final accuracy", _fmt(summary["final_accuracy"], "frac")),
            ("final test loss", _fmt(summary["final_loss"], "frac")),
            ("time to target", f"{_fmt(summary['time_to_target'], 's')} (target "
                               f"{_fmt(summary['target_accuracy'], 'frac')})")):
        table.add_row(label, value)
    for name, w in summary["wan"].items():
        configured = w.get("configured_rate_mean")
        table.add_row(f"WAN {name}", f"{w['bytes'] / 1e6:.1f} MB, mean {w['mean_throughput'] / 1e6:.2f} "
                                     f"Mbit/s of {_fmt_mbit(configured)} configured (mean over the "
                                     f"same time), {_fmt_mbit(w['configured_rate_final'])} at the end")
    for name, q in summary.get("probe", {}).items():
        follow = ", ".join("-" if f is None else f"{f:.1f}s" for f in q["follow_seconds"])
        overhead = "-" if q["overhead"] is None else f"{q['overhead'] * 100:.1f}%"
        table.add_row(f"probe {name}", f"median error {q['median_abs_error'] * 100:.1f}%, probe traffic "
                                       f"{overhead} of the link"
                                       + (f", followed changes in {follow}" if follow else ""))
    table.add_row("delay emulated by", summary["environment"].get("delay_backend", "-"))
    table.add_row("TCP congestion control", summary["environment"].get("tcp_congestion_control", "-"))
    table.add_row("TCP slow start after idle", summary["environment"].get("tcp_slow_start_after_idle", "-"))
    table.add_row("machine CPU", cpu.describe(summary.get("cpu")))
    return table


@main.command()
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
def run(file, delay_backend, runs_root, with_console, with_ui, ui_port):
    """Build the network, run the experiment, report, tear down."""
    from testbed.analysis import report as reportmod
    from testbed.run import runner

    spec = load_spec(file)
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
        if live is not None:
            live.start()
        outcome = runner.run(spec, runs_root, delay_backend, show=show, say=click.echo,
                             on_folder=lambda f: click.echo(f"run folder: {f.path}"),
                             console=_start_console if with_console else None,
                             ui=_live_page(ui_port) if with_ui else None)
    except CapabilityError as e:
        fail(str(e), EXIT_CANNOT)
    except runner.RunError as e:
        fail(str(e))
    finally:
        if live is not None:
            live.stop()
        restore()
    summary = outcome.folder.read_json("summary.json", {})
    out.print(summary_table(summary, f"run {os.path.basename(outcome.folder.path)}"))
    out.print("plots: " + ", ".join(outcome.folder.file(p)
                                    for p in reportmod.PLOTS + reportmod.search_report.PLOTS
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


@main.command()
@click.argument("command", nargs=-1, required=True)
@click.option("--run", "run_dir", type=click.Path(file_okay=False), default=None,
              help="the running experiment's folder (default: the newest run)")
def inject(command, run_dir):
    """Send a command to a running experiment, e.g. `link a b bw=5mbit`."""
    from testbed.emulation.commands import CommandError
    from testbed.run.control import inject as send
    from testbed.records.runfolder import newest_run

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


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False), required=False)
@click.option("--html", "with_html", is_flag=True,
              help="also write report.html: a page that replays the run, self-contained")
def report(run_dir, with_html):
    """Summarize a run folder (the newest by default) and draw its plots."""
    from testbed.analysis import report as reportmod
    from testbed.records.runfolder import newest_run

    run_dir = _run_dir(run_dir or newest_run(RUNS_ROOT) or fail(f"no runs in {RUNS_ROOT}"))
    summary, plots = reportmod.report(run_dir)
    out.print(summary_table(summary, f"run {os.path.basename(os.path.normpath(run_dir))}"))
    out.print("plots: " + ", ".join(plots))
    if with_html:
        from testbed.ui.page import write_report
        out.print(f"page: {write_report(run_dir)}")


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", "out_dir", default=None, help="folder for compare.csv and compare.png")
def compare(run_dirs, out_dir):
    """Put several runs side by side: one table, one plot."""
    from testbed.analysis import report as reportmod

    for d in run_dirs:
        _run_dir(d)
    out_dir = out_dir or os.path.join(RUNS_ROOT, "compare-" + time.strftime("%Y%m%d-%H%M%S"))
    rows = reportmod.compare(run_dirs, out_dir)
    out.print(compare_table(rows, reportmod.COMPARE_COLUMNS))
    out.print(f"written: {os.path.join(out_dir, 'compare.csv')}, {os.path.join(out_dir, 'compare.png')}")


def compare_table(rows, columns):
    table = Table(title="comparison", title_justify="left")
    for col in columns:
        # Run names differ only at their end: never cut them.
        table.add_column(col, **({"no_wrap": True, "min_width": max(len(r["run"]) for r in rows)}
                                 if col == "run" else {}))
    kinds = {"wall_time": "s", "iteration_time": "ms", "sync_time": "ms", "sync_over_bound": "frac",
             "final_accuracy": "frac", "target_accuracy": "frac", "time_to_target": "s"}
    for r in rows:
        table.add_row(*[_fmt(r[c], kinds.get(c, "")) for c in columns])
    return table


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


def _sweep_table(rows, title):
    table = Table(title=title, title_justify="left")
    cols = [k for k in rows[0] if k not in ("run", "label")
            and any(r.get(k) is not None for r in rows)] if rows else []
    for c in cols:
        table.add_column(c)
    kinds = {"wall_time": "s", "iteration_time": "ms", "sync_time": "ms", "sync_bound": "ms",
             "sync_over_bound": "frac", "final_accuracy": "frac", "time_to_target": "s"}
    for r in rows:
        table.add_row(*[_fmt(r.get(c), kinds.get(c, "")) for c in cols])
    return table


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


@main.command()
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
    out.print(_sweep_table(rep.rows_of(record), f"sweep {recipe.id} ({sweep_dir})"))


@main.command()
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
    out.print(_sweep_table(rows, f"{recipe_id}{' (quick)' if quick else ''}"))
    out.print("written: " + ", ".join(files))


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model-bytes", "model_bytes", metavar="N", help="bytes each DC contributes per sync")
@click.option("--json", "as_json", is_flag=True, help="print {t_cut, t_lb, t_opt} as JSON")
def bound(file, model_bytes, as_json):
    """One synchronization's cut bound, partial-sum lower bound and best tree packing."""
    import json
    import math

    from testbed import bounds

    if model_bytes is None:
        fail("testbed bound needs --model-bytes N, the bytes each DC contributes per sync")
    try:
        size = float(model_bytes)
    except ValueError:
        size = math.nan
    if not (math.isfinite(size) and size > 0):
        fail(f"--model-bytes needs a positive number of bytes, not {model_bytes!r}")
    wan = bounds.wan_of(load_spec(file))
    if not wan.reachable():
        fail(f"{file}: the WAN does not join every data center with workers")
    times = {"t_cut": bounds.t_cut(wan, size), "t_lb": bounds.t_lb(wan, size),
             "t_opt": bounds.t_opt(wan, size)}
    if as_json:
        click.echo(json.dumps(times))
        return
    table = Table(title=f"one synchronization of {size:g} bytes", title_justify="left")
    for col in ("bound", "seconds", "what it is"):
        table.add_column(col)
    table.add_row("t_cut", f"{times['t_cut']:.4f}", "pairwise cut: one DC's sum must reach another")
    table.add_row("t_lb", f"{times['t_lb']:.4f}", "partial-sum lower bound (transit DCs only forward)")
    table.add_row("t_opt", f"{times['t_opt']:.4f}", "best multi-root tree packing, achievable")
    out.print(table)


def _policy_params(pairs):
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--param takes KEY=VALUE, not {pair!r}")
        try:
            params[key] = float(value)
        except ValueError:
            params[key] = value
    return params


@main.command("coflow-sim")
@click.argument("trace_file", type=click.Path(dir_okay=False))
@click.option("--policy", required=True, help="fair, fifo-lm, sincronia, beamer or varys")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="a policy parameter, e.g. percentile=80 or reorder=events")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def coflow_sim(trace_file, policy, params, as_json):
    """Simulate a coflow trace on a big switch under a scheduling policy."""
    import json

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
    except TypeError:
        fail(f"policy {policy} does not take the parameters {', '.join(params)}")
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


@main.command()
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
        out.print(f"run {rid}: stopped {removed['processes']} processes, removed "
                  f"{len(removed['links'])} links"
                  + (f"; {removed['run_dir']} marked killed" if removed.get("killed") else ""))
    for rid in sorted(skipped):
        out.print(f"run {rid}: still running; left alone (use --all to remove it)")
    if not report:
        out.print("nothing to clean")


if __name__ == "__main__":
    main()
