"""The tables and lines the `testbed` commands print: a topology's links,
a run's summary, runs side by side, a sweep's settings, the doctor's
checks, the selftest's measurements and the bounds of one synchronization."""

from rich.table import Table

from testbed.records import cpu
from testbed.spec.units import format_rate, format_time, plural


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


def doctor_table(checks):
    table = Table(title="testbed doctor", title_justify="left")
    for col in ("check", "status", "detail", "fix"):
        table.add_column(col)
    for c in checks:
        status = "[green]ok[/]" if c.ok else ("[red]missing[/]" if c.essential else "[yellow]warn[/]")
        table.add_row(c.name, status, c.detail, "" if c.ok else c.fix)
    return table


def selftest_table(results, title):
    relays = any(r.relay_cpu is not None for r in results)
    table = Table(title=title, title_justify="left")
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
    return table


def selftest_note(results):
    """What the selftest expects, under its table."""
    relays = any(r.relay_cpu is not None for r in results)
    return ("expected goodput = wire rate x 1448/1514 (TCP payload per full frame); "
            "expected RTT = sum of both one-way delays"
            + ("; relay CPU = the delay line process's share of one core while that "
               "direction runs at full rate (the compiled one is one process for all links)"
               if relays else ""))


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
            ("search", f"policy {s['policy']}, {plural(s['stages'], 'stage')}, "
                       f"{plural(s['coflows'], 'coflow')}"),
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
    if "programs" in summary:
        return programs_table(summary, title)
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    b = summary["iteration_breakdown"]
    for label, value in (
            ("status", status_line(summary)),
            ("why", summary["reason"].splitlines()[0] if summary.get("reason") else "-"),
            ("system", f"sync {summary['sync']}, overlay {summary['overlay']}, "
                       f"{summary['workload']} {summary['model']}, {plural(summary['workers'], 'worker')}"),
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
    _wan_rows(table, summary)
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


def _wan_rows(table, summary):
    for name, w in summary["wan"].items():
        configured = w.get("configured_rate_mean")
        table.add_row(f"WAN {name}", f"{w['bytes'] / 1e6:.1f} MB, mean {w['mean_throughput'] / 1e6:.2f} "
                                     f"Mbit/s of {_fmt_mbit(configured)} configured (mean over the "
                                     f"same time), {_fmt_mbit(w['configured_rate_final'])} at the end")


def programs_table(summary, title):
    """A run of programs: each process's end, the WAN, the metrics' last values."""
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("status", status_line(summary))
    table.add_row("why", summary["reason"].splitlines()[0] if summary.get("reason") else "-")
    table.add_row("programs time", _fmt(summary.get("wall_time"), "s"))
    for p in summary["programs"]:
        end = "running at the end" if p["code"] is None else f"exit {p['code']}"
        table.add_row(f"rank {p['rank']} on {p['host']}", f"{end} after {_fmt(p['seconds'], 's')}: "
                                                          f"{p['command']}")
    _wan_rows(table, summary)
    for host, values in summary.get("metrics", {}).items():
        table.add_row(f"metrics of {host}", ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}"
                                                         for k, v in values.items()))
    table.add_row("link changes", str(summary.get("link_changes", 0)))
    table.add_row("delay emulated by", summary["environment"].get("delay_backend", "-"))
    table.add_row("machine CPU", cpu.describe(summary.get("cpu")))
    return table


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


def sweep_table(rows, title):
    table = Table(title=title, title_justify="left")
    cols = [k for k in rows[0] if k not in ("run", "label", "setting")
            and any(r.get(k) is not None for r in rows)] if rows else []
    for c in cols:
        table.add_column(c)
    kinds = {"wall_time": "s", "iteration_time": "ms", "sync_time": "ms", "sync_bound": "ms",
             "sync_over_bound": "frac", "final_accuracy": "frac", "time_to_target": "s"}
    for r in rows:
        table.add_row(*[_fmt(r.get(c), kinds.get(c, "")) for c in cols])
    return table


def bounds_table(times, size):
    table = Table(title=f"one synchronization of {size:g} bytes", title_justify="left")
    for col in ("bound", "seconds", "what it is"):
        table.add_column(col)
    table.add_row("t_cut", f"{times['t_cut']:.4f}", "pairwise cut: one DC's sum must reach another")
    table.add_row("t_lb", f"{times['t_lb']:.4f}", "partial-sum lower bound (transit DCs only forward)")
    table.add_row("t_opt", f"{times['t_opt']:.4f}", "best multi-root tree packing, achievable")
    return table
