"""What a run of programs (a command workload) says: each process's exit
code and seconds, the bytes and throughput of every WAN direction while
they ran, the link changes, and the metrics the programs wrote (JSON lines
to $TESTBED_METRICS), plotted against time."""

import os

from agents.events import read_events
from testbed.analysis.figures import links_figure, save
from testbed.analysis.wan import load, probe_quality, wan_use
from testbed.records import cpu

PLOTS = ("links.png", "metrics.png")


def started_at(folder):
    """When the programs were launched (monotonic), from the runner's events."""
    runner = read_events(folder.file("runner.jsonl"))
    return next((e["t"] for e in runner if e["ev"] == "programs_started"), None)


def metrics(folder):
    """{host: [its metric lines, each with the `t` the runner saw it]}."""
    out = {}
    for line in read_events(folder.file(os.path.join("programs", "metrics.jsonl"))):
        out.setdefault(line["host"], []).append(line)
    return out


def summarize(folder, spec):
    events, samples, changes = load(folder)
    status = folder.read_json("status.json", {})
    t0 = started_at(folder)
    processes = folder.read_json("programs.json", [])
    seconds = [p["seconds"] for p in processes if p.get("seconds") is not None]
    # Each host's last value of every scalar it wrote (a status word too);
    # the plot draws the numbers only.
    last = {}
    for host, lines in metrics(folder).items():
        for line in lines:
            for key, value in line.items():
                if key not in ("t", "host") and isinstance(value, (int, float, str)):
                    last.setdefault(host, {})[key] = value
    end = t0 + max(seconds) if t0 is not None and seconds else None
    summary = {
        "name": spec.get("name"),
        "status": status.get("status"), "reason": status.get("reason"),
        "stopped_by": status.get("stopped_by"),
        "workload": (spec.get("experiment") or {}).get("workload"),
        "programs": [{k: p.get(k) for k in ("host", "rank", "command", "code", "seconds")}
                     for p in processes],
        "wall_time": max(seconds) if seconds else None,
        "wan": wan_use(spec, events, samples, changes, t0),
        "link_changes": len(changes),
        "metrics": last,
        "probe": probe_quality(events, spec, changes) if events else None,
        "environment": folder.read_json("env.json", {}),
        "cpu": cpu.load_summary(read_events(folder.cpu_samples), t0, end),
    }
    folder.write_json("summary.json", summary)
    return summary


def plot(folder, summary):
    """links.png (configured and carried, per direction) and metrics.png
    (every numeric metric against time, one panel each, a line per host)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events, samples, _ = load(folder)
    t0 = started_at(folder) or 0.0
    written = []
    fig = links_figure(samples, events, t0, "the programs started")
    if fig:
        written.append(save(fig, folder.file(PLOTS[0])))
    lines = metrics(folder)
    keys = sorted({k for rows in lines.values() for r in rows for k, v in r.items()
                   if k not in ("t", "host") and isinstance(v, (int, float))})
    if keys:
        fig, axes = plt.subplots(len(keys), 1, figsize=(8, 2.2 * len(keys) + 0.6), sharex=True,
                                 squeeze=False)
        for ax, key in zip(axes[:, 0], keys):
            for host, rows in sorted(lines.items()):
                points = [(r["t"] - t0, r[key]) for r in rows if isinstance(r.get(key), (int, float))]
                if points:
                    ax.plot(*zip(*points), marker=".", label=host)
            ax.set_ylabel(key)
        axes[0, 0].legend(fontsize=8)
        axes[-1, 0].set_xlabel("time since the programs started (s)")
        written.append(save(fig, folder.file(PLOTS[1])))
    return written
