"""netstorm-figure: accuracy against wall time per system on the static
and the dynamic WAN (top), time to 90% accuracy of NetStorm and its
ablations (bottom left), and sync time per iteration against the WAN's
lower bound when the model is large enough for bandwidth to dominate
(bottom right).  table.csv has every run with its time to each accuracy
level, its speedup over the star at that level and in sync time, and its
sync time against the cut bound and against `t_lb` and `t_opt`
(testbed/bounds: the best any overlay can do, and the best tree packing),
all three from the links as configured at the start; on the dynamic WAN
also against `t_lb` of the links as they were while each synchronization
ran (`sync_over_t_lb_as_run`: the median of each iteration's own ratio)."""

import os

from testbed.analysis import report
from testbed.analysis.stats import write_table
from testbed.records.runfolder import RunFolder

SYSTEMS = ("mxnet", "mlnet", "tsengine", "netstorm")
NAMES = {"mxnet": "MXNET (PS star)", "mlnet": "MLNET", "tsengine": "TSEngine",
         "netstorm": "NetStorm"}
ABLATIONS = {"netstorm": "NetStorm", "netstorm-r1": "R = 1", "netstorm-r3": "R = 3",
             "netstorm-single-path": "one path", "netstorm-frozen": "frozen"}
NETWORKS = ("static", "dynamic")        # trained to accuracy; "bandwidth": a large synthetic model
LEVELS = (0.85, 0.90, 0.95)
COLUMNS = ("network", "system", "status", "iterations", "wall_time_s", "final_accuracy",
           "sync_time_s", "sync_bound_s", "sync_over_bound", "sync_t_lb_s", "sync_t_opt_s",
           "sync_over_t_lb", "sync_t_lb_as_run_s", "sync_over_t_lb_as_run",
           *(f"tta_{round(level * 100)}_s" for level in LEVELS),
           *(f"speedup_{round(level * 100)}" for level in LEVELS), "sync_speedup")


def curve(run):
    """[(seconds since training began, accuracy)] of a run's evaluations."""
    if not run:
        return []
    events, _, _ = report.load(RunFolder(run))
    t0 = report.run_start(events) or 0.0
    evals = sorted((e for evs in events.values() for e in evs if e["ev"] == "eval"),
                   key=lambda e: e["t"])
    return [(e["t"] - t0, e["accuracy"]) for e in evals]


def time_to(points, level):
    return next((t for t, acc in points if acc >= level), None)


def split_label(variant):
    network, _, system = variant.partition("-")
    return network, system


def summarize(rows):
    table, curves = [], {}
    for r in rows:
        network, system = split_label(r["variant"]["name"])
        points = curve(r.get("run"))
        curves[(network, system)] = points
        row = {"network": network, "system": system, "status": r.get("status"),
               "iterations": r.get("iterations"), "wall_time_s": r.get("wall_time"),
               "final_accuracy": r.get("final_accuracy"), "sync_time_s": r.get("sync_time"),
               "sync_bound_s": r.get("sync_bound"), "sync_over_bound": r.get("sync_over_bound"),
               "sync_t_lb_s": r.get("sync_t_lb"), "sync_t_opt_s": r.get("sync_t_opt"),
               "sync_over_t_lb": r.get("sync_over_t_lb"), "sync_t_lb_as_run_s": r.get("sync_t_lb_as_run"),
               "sync_over_t_lb_as_run": r.get("sync_over_t_lb_as_run")}
        for level in LEVELS:
            row[f"tta_{round(level * 100)}_s"] = time_to(points, level)
        table.append(row)
    for row in table:
        star = next((t for t in table if t["network"] == row["network"] and t["system"] == "mxnet"),
                    None)
        for level in LEVELS:
            key = f"tta_{round(level * 100)}_s"
            mine, base = row[key], star[key] if star else None
            # > 1: this system reaches the accuracy that many times sooner than the star.
            row[f"speedup_{round(level * 100)}"] = base / mine if mine and base else None
        base = star["sync_time_s"] if star else None
        row["sync_speedup"] = base / row["sync_time_s"] if base and row["sync_time_s"] else None
    return table, curves


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table, curves = summarize(rows)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(table, csv_path, COLUMNS)
    fig, ((acc_static, acc_dynamic), (ablation, bandwidth)) = plt.subplots(2, 2, figsize=(12, 8))
    for ax, network in ((acc_static, "static"), (acc_dynamic, "dynamic")):
        for i, system in enumerate(SYSTEMS):
            points = curves.get((network, system))
            if points:
                ax.plot([t for t, _ in points], [a for _, a in points], marker=".", color=f"C{i}",
                        label=NAMES[system])
        ax.set(xlabel="wall time (s)", ylabel="test accuracy", title=f"{network} network",
               ylim=(0.5, 1.0))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8, loc="lower right")
    done = [t for t in table if t["status"] == "completed"]
    ablations = [t for t in done if t["system"].startswith("netstorm") and t["tta_90_s"]]
    ablation.bar(range(len(ablations)), [t["tta_90_s"] for t in ablations],
                 color=["C3" if t["system"] == "netstorm" else "C7" for t in ablations])
    ablation.set_xticks(range(len(ablations)))
    ablation.set_xticklabels([f"{t['network']}\n{ABLATIONS.get(t['system'], t['system'])}"
                              for t in ablations], fontsize=8)
    ablation.set(ylabel="time to 90% accuracy (s)", title="NetStorm and its ablations")
    large = [t for t in done if t["network"] == "bandwidth" and t["sync_time_s"]]
    bandwidth.bar(range(len(large)), [t["sync_time_s"] for t in large],
                  color=[f"C{SYSTEMS.index(t['system'])}" if t["system"] in SYSTEMS else "C7"
                         for t in large])
    for x, t in enumerate(large):
        if t["sync_t_lb_s"]:
            bandwidth.hlines(t["sync_t_lb_s"], x - 0.4, x + 0.4, colors="k", linestyles="--")
            bandwidth.annotate(f"{t['sync_over_t_lb']:.1f}x", (x, t["sync_time_s"]),
                               textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
        if t["sync_bound_s"]:
            bandwidth.hlines(t["sync_bound_s"], x - 0.4, x + 0.4, colors="k", linestyles=":")
    bandwidth.set_xticks(range(len(large)))
    bandwidth.set_xticklabels([ABLATIONS.get(t["system"], NAMES.get(t["system"], t["system"]))
                               for t in large], fontsize=8)
    bandwidth.set(ylabel="sync time per iteration (s)",
                  title="1 MB synthetic model, static network\n(dashes: t_lb; dots: cut bound)")
    fig.suptitle("NetStorm's 9-DC WAN scaled 25x down, 9 workers, MLP on digits, SSGD",
                 fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
