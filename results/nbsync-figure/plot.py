"""nbsync-figure: per scheme and sync-to-compute ratio, the time to 85%
and 90% test accuracy (top left and middle, the median over the seeds
with min-max bars) and NBSync's speedup over each scheme at 90%, paired
per seed (top right, with the paper's 1.43-2.79x shaded); below, every
run's accuracy against wall time, one panel per ratio.

draw() keeps each completed run's records (testbed/analysis/records.py)
and computes table.csv from them alone (`table`).  Per run: the time to
each accuracy by the shared rule (testbed/analysis/accuracy.py: a running
median of three evaluations, taken every second of wall time on a copy of
the model rank 0 holds, crossing the level, interpolated).  Per setting:
the median, min and max over runs; NBSync's speedup is the median, min
and max of the per-seed ratios of this scheme's time to NBSync's (a seed
draws the same shards and initial weights for every scheme).  A time
that is not reached within the run is missing, and `reached` says how
many runs reached it."""

import os

from testbed.analysis import records
from testbed.analysis.accuracy import tta_columns
from testbed.analysis.figures import every_run, median_bars
from testbed.analysis.stats import describe, paired, spread, write_table

SCHEMES = ("ssgd", "fedavg", "fedasync", "esync", "nbsync")
NAMES = {"ssgd": "SSGD", "fedavg": "FedAvg", "fedasync": "FedAsync", "esync": "ESync",
         "nbsync": "NBSync"}
# The fastest worker's step (ms), in the order the sync grows against the
# slowest worker's step (8x slower): a sync of the model takes half, two
# or eight of its steps.
STEPS_MS = (160, 40, 10)
LEVELS = (0.85, 0.90)
COLUMNS = ("fastest_step_ms", "slowest_step_ms", "scheme", "runs", "failed", "rounds_median",
           *(f"tta_{round(100 * level)}_{stat}" for level in LEVELS
             for stat in ("median_s", "min_s", "max_s", "reached")),
           *(f"nbsync_speedup_{round(100 * level)}_{stat}" for level in LEVELS
             for stat in ("median", "min", "max")),
           "sync_median_s", "t_lb_s")


def split(setting):
    """(fastest step in ms, scheme, seed) of a setting: its variant is SCHEME-STEPms."""
    scheme, _, step = setting["variant"]["name"].partition("-")
    return int(step.removesuffix("ms")), scheme, setting.get("seed", 0)


def label(step_ms):
    return f"{step_ms} ms / {8 * step_ms} ms steps"


def run_numbers(record):
    """{rounds, sync, t_lb, tta_85, tta_90} of one run's record: sync is the
    run's mean synchronization (its summary's, as each scheme times it)."""
    return {"rounds": record.summary.get("iterations"), "sync": record.summary.get("sync_time"),
            "t_lb": record.summary.get("sync_t_lb"), **record.times_to(LEVELS)}


def table(runs_dir):
    """One row per step time and scheme (COLUMNS), from the records alone."""
    kept, failed = records.load(runs_dir)
    numbers = records.by_seed(kept, split, run_numbers)
    out = []
    for step in STEPS_MS:
        nb = numbers.get((step, "nbsync"), {})
        for scheme in SCHEMES:
            mine = numbers.get((step, scheme), {})
            lost = sum(1 for f in failed if split(f["setting"])[:2] == (step, scheme))
            if not mine and not lost:
                continue
            runs = list(mine.values())
            row = {"fastest_step_ms": step, "slowest_step_ms": 8 * step, "scheme": scheme,
                   "runs": len(runs), "failed": lost,
                   "rounds_median": describe([m["rounds"] for m in runs])["median"],
                   "sync_median_s": describe([m["sync"] for m in runs])["median"],
                   "t_lb_s": describe([m["t_lb"] for m in runs])["median"]}
            for level in LEVELS:
                key = f"tta_{round(100 * level)}"
                row.update(tta_columns(runs, key))
                # > 1: NBSync reaches the level that many times sooner, same seed.
                row.update(spread(f"nbsync_speedup_{round(100 * level)}", paired(mine, nb, key)))
            out.append(row)
    return out


def draw(rows, out_dir, recipe):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs_dir = os.path.join(out_dir, records.RUNS)
    records.keep(rows, runs_dir)
    got = table(runs_dir)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(got, csv_path, COLUMNS)

    def row(step, scheme):
        return next((t for t in got if t["fastest_step_ms"] == step and t["scheme"] == scheme), None)

    steps = [s for s in STEPS_MS if any(t["fastest_step_ms"] == s for t in got)]
    fig, axes = plt.subplots(2, 3, figsize=(16, 9))
    groups = [f"sync = {ratio_of(s)} slowest steps\n({label(s)})" for s in steps]
    for ax, level in zip(axes[0][:2], LEVELS):
        key = f"tta_{round(100 * level)}"
        median_bars(ax, groups, [(NAMES[sc], [bar_of(row(s, sc), key) for s in steps]) for sc in SCHEMES])
        ax.set(ylabel=f"time to {round(100 * level)}% test accuracy (s)",
               title=f"time to {round(100 * level)}%: median, min-max; no bar: not reached")
        ax.tick_params(axis="x", labelsize=8)
    axes[0][0].legend(fontsize=8, loc="upper left")
    speed = axes[0][2]
    speed.axhspan(1.43, 2.79, color="0.85", label="paper: 1.43-2.79x")
    speed.axhline(1, color="k", lw=0.8)
    for i, sc in enumerate(s for s in SCHEMES if s != "nbsync"):
        pts = [(j, row(s, sc)) for j, s in enumerate(steps)]
        pts = [(j, t) for j, t in pts if t and t["nbsync_speedup_90_median"] is not None]
        if pts:
            speed.errorbar([j + (i - 1.5) * 0.06 for j, _ in pts],
                           [t["nbsync_speedup_90_median"] for _, t in pts],
                           yerr=[[t["nbsync_speedup_90_median"] - t["nbsync_speedup_90_min"] for _, t in pts],
                                 [t["nbsync_speedup_90_max"] - t["nbsync_speedup_90_median"] for _, t in pts]],
                           marker="o", capsize=3, color=f"C{i}", label=f"over {NAMES[sc]}")
    speed.set_xticks(range(len(steps)))
    speed.set_xticklabels([f"{ratio_of(s)}" for s in steps])
    speed.set(xlabel="sync of the model / slowest worker's step", ylim=(0, None),
              ylabel="scheme's time to 90% / NBSync's, per seed",
              title="NBSync's speedup to 90%: median, min-max")
    speed.legend(fontsize=8)
    lines = records.evals_by(runs_dir, lambda s: split(s)[:2])
    for ax, step in zip(axes[1], steps):
        every_run(ax, [(NAMES[sc], lines.get((step, sc), [])) for sc in SCHEMES], 0.90,
                  f"sync = {ratio_of(step)} slowest steps: every run")
        ax.set_xlim(0, 125)
    fig.suptitle("4 DCs, 8 workers (speeds 1x-8x), 2-4 Mbit/s WAN, MLP on non-iid digits", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path, csv_path]


def bar_of(row, key):
    """(min, median, max) of a time to accuracy in a table row, or None."""
    return row and (row[f"{key}_min_s"], row[f"{key}_median_s"], row[f"{key}_max_s"])


def ratio_of(step_ms):
    """A synchronization of the model in the slowest worker's steps (8x the
    fastest), as the recipe sets them: the sync is the same at every step
    time (the same model on the same links), table.csv has it measured."""
    return {160: "0.5", 40: "2", 10: "8"}[step_ms]
