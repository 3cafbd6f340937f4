"""nbsync-figure: accuracy against wall time of every sync scheme with
static and with changing compute speeds (top), time to 85% and 90%
accuracy (bottom left) and each worker's overlap ratio, the share of its
synchronization time spent computing (bottom right).  table.csv: per run
the times to each level, NBSync's speedup over the scheme at each level,
the final accuracy (mean of the last three evaluations), and per worker
the mean local steps per round and overlap ratio."""

import os
import statistics

from testbed.analysis import report
from testbed.analysis.stats import write_table
from testbed.records.runfolder import RunFolder

SCHEMES = ("ssgd", "fedavg", "fedasync", "esync", "nbsync")
NAMES = {"ssgd": "SSGD", "fedavg": "FedAvg", "fedasync": "FedAsync", "esync": "ESync",
         "nbsync": "NBSync"}
SETTINGS = ("static", "changing")
LEVELS = (0.85, 0.90)
COLUMNS = ("speeds", "sync", "status", "rounds", "wall_time_s", "final_accuracy",
           *(f"tta_{round(level * 100)}_s" for level in LEVELS),
           *(f"nbsync_speedup_{round(level * 100)}" for level in LEVELS),
           "mean_overlap", "steps_per_round", "overlap_per_worker")


def run_events(run):
    events, _, _ = report.load(RunFolder(run))
    return events, report.run_start(events) or 0.0


def curve(events, t0):
    evals = sorted((e for evs in events.values() for e in evs if e["ev"] == "eval"),
                   key=lambda e: e["t"])
    return [(e["t"] - t0, e["accuracy"]) for e in evals]


def time_to(points, level):
    return next((t for t, acc in points if acc >= level), None)


def per_worker(events, key):
    """{worker: mean of `key` over its rounds}."""
    out = {}
    for agent, evs in events.items():
        values = [e.get(key) or 0.0 for e in evs if e["ev"] == "iter"]
        if values:
            out[agent] = statistics.fmean(values)
    return dict(sorted(out.items()))


def summarize(rows):
    table, curves, overlaps = [], {}, {}
    for r in rows:
        setting, sync = ("changing" if r.get("dynamics") else "static"), r["variant"]["name"]
        row = {"speeds": setting, "sync": sync, "status": r.get("status"),
               "rounds": r.get("iterations"), "wall_time_s": r.get("wall_time")}
        if r.get("run"):
            events, t0 = run_events(r["run"])
            points = curve(events, t0)
            curves[(setting, sync)] = points
            last = [a for _, a in points[-3:]]
            row["final_accuracy"] = statistics.fmean(last) if last else None
            for level in LEVELS:
                row[f"tta_{round(level * 100)}_s"] = time_to(points, level)
            overlap = per_worker(events, "overlap")
            overlaps[(setting, sync)] = overlap
            row["mean_overlap"] = statistics.fmean(overlap.values()) if overlap else None
            row["steps_per_round"] = " ".join(f"{w}:{s:.1f}"
                                              for w, s in per_worker(events, "steps").items())
            row["overlap_per_worker"] = " ".join(f"{w}:{o:.2f}" for w, o in overlap.items())
        table.append(row)
    for row in table:
        nb = next((t for t in table if t["speeds"] == row["speeds"] and t["sync"] == "nbsync"), None)
        for level in LEVELS:
            key = f"tta_{round(level * 100)}_s"
            mine, theirs = (nb or {}).get(key), row.get(key)
            # > 1: NBSync reaches the level that many times sooner than this scheme.
            row[f"nbsync_speedup_{round(level * 100)}"] = theirs / mine if mine and theirs else None
    return table, curves, overlaps


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table, curves, overlaps = summarize(rows)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(table, csv_path, COLUMNS)
    fig, ((acc_static, acc_changing), (tta, overlap)) = plt.subplots(2, 2, figsize=(12, 8))
    for ax, setting in ((acc_static, "static"), (acc_changing, "changing")):
        for i, sync in enumerate(SCHEMES):
            points = curves.get((setting, sync))
            if points:
                ax.plot([t for t, _ in points], [a for _, a in points], color=f"C{i}",
                        label=NAMES[sync], linewidth=1.2)
        ax.set(xlabel="wall time (s)", ylabel="test accuracy", ylim=(0.3, 1.0),
               title=f"{setting} compute speeds" + (" (all change at 40 s)" if setting == "changing"
                                                    else ""))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8, loc="lower right")
    width = 0.8 / (len(SETTINGS) * len(LEVELS))
    for j, (setting, level) in enumerate((s, lv) for s in SETTINGS for lv in LEVELS):
        key = f"tta_{round(level * 100)}_s"
        xs, ys = [], []
        for i, sync in enumerate(SCHEMES):
            row = next((t for t in table if t["speeds"] == setting and t["sync"] == sync), None)
            if row and row.get(key):
                xs.append(i + (j - 1.5) * width)
                ys.append(row[key])
        tta.bar(xs, ys, width, label=f"{setting}, {round(level * 100)}%", color=f"C{j}")
    tta.set_xticks(range(len(SCHEMES)))
    tta.set_xticklabels([NAMES[s] for s in SCHEMES])
    tta.set(ylabel="time to accuracy (s); missing: not reached", title="time to 85% and 90% accuracy")
    tta.legend(fontsize=8)
    static = overlaps.get(("static", "nbsync"), {})
    names = list(static)
    for k, sync in enumerate(("nbsync", "esync", "fedavg")):
        values = overlaps.get(("static", sync), {})
        overlap.bar([i + (k - 1) * 0.27 for i in range(len(names))],
                    [values.get(w, 0.0) for w in names], 0.27, label=NAMES[sync],
                    color=f"C{SCHEMES.index(sync)}")
    overlap.set_xticks(range(len(names)))
    overlap.set_xticklabels(names, rotation=45, fontsize=8)
    overlap.set(ylabel="compute time during sync / sync time", ylim=(0, 1.05),
                title="overlap ratio per worker (static speeds)")
    overlap.legend(fontsize=8)
    fig.suptitle("4 DCs, 8 workers (speeds 1x-8x), 2-4 Mbit/s WAN, MLP on non-iid digits", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
