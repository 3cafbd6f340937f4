"""beamer-figure: fair sharing, FIFO-LM, Sincronia, Beamer and Beamer's
alternative stage orderings on successive-halving hyper-parameter
searches, on the emulated network (from the sweep's runs) and in the
fluid simulator at a scale the emulator cannot hold (computed here).
Top: the average stage completion time (SCT) of each policy on the
testbed and in the simulator against its lower bound (no schedule beats
it), and each policy's average SCT over Beamer's, paired per seed, for
the testbed, the simulator with the searches started together and the
simulator with them started 30 s apart.  Bottom: the average SCT of each
stage of a search.  Medians over the seeds with min-max bars.

table.csv (the testbed) is computed from the runs' kept records alone
(`table`); simulator.csv is the simulator's, computed by `simulated`.
Both have one row per policy (COLUMNS): the median, min and max over the
seeds of the average SCT and of its per-seed ratio to Beamer's, the
median of the lower bound, of the average coflow completion time (CCT)
and of a search's makespan, and the median average SCT of each stage
(stage 1 is the first, run by every configuration)."""

import os
import statistics

from agents.coflow.policies import make_policy
from agents.coflow.search import SearchParams, SearchWorkload
from testbed.analysis import records
from testbed.analysis.figures import median_bars
from testbed.analysis.stats import describe, paired, ratio, spread, write_table
from testbed.coflow.bounds import search_bounds
from testbed.coflow.simulator import simulate

# Each policy: (registry name, options).  Beamer's alternatives rank its stages by their
# number of jobs, by their jobs' next iteration only, or rank the coflows themselves.
POLICIES = {"fair": ("fair", {}), "fifo-lm": ("fifo-lm", {}), "sincronia": ("sincronia", {}),
            "beamer": ("beamer", {}), "beamer-jobs": ("beamer", {"stage_weight": "jobs"}),
            "beamer-next": ("beamer", {"demand": "next"}),
            "beamer-coflows": ("beamer", {"ordering": "coflows"})}
NAMES = {"fair": "fair", "fifo-lm": "FIFO-LM", "sincronia": "Sincronia", "beamer": "Beamer",
         "beamer-jobs": "Beamer, stages weighted by jobs", "beamer-next": "Beamer, next-iteration demand",
         "beamer-coflows": "Beamer, coflows ranked directly"}
BASE = "beamer"
MAX_STAGES = 5
COLUMNS = ("task_gap_s", "policy", "runs", "failed",
           *(f"avg_sct_{stat}_s" for stat in ("median", "min", "max")),
           *(f"over_beamer_{stat}" for stat in ("median", "min", "max")),
           "lower_bound_s", "over_bound_median", "avg_cct_median_s", "makespan_median_s",
           *(f"stage{k}_sct_median_s" for k in range(1, MAX_STAGES + 1)))

# The simulated searches: 8 start together (and, as a second setting, 30 s apart), each
# with 16 configurations, halving every stage (iterations 1, 2, 4, 8, 16), each job a PS
# and 4 workers on distinct machines of 32.  Port capacity 1 per second is a 1 Gbit/s
# NIC, so a size unit is 1 Gbit: fp32 models from the zoo (17-528 MB) times 8 / 1000.
SIM_SCALE = {"tasks": 8, "configs": 16, "eta": 2, "iterations": 1, "workers": 4, "machines": 32,
             "scale": 0.008, "compute": (0.5, 2.0)}
SIM_SEEDS = (0, 1, 2, 3, 4)
SIM_GAPS = (0.0, 30.0)


def stage_number(key):
    """1 for the first stage of a search, from an SCT key 'TASK/sK' or (task, 'sK')."""
    name = key[1] if isinstance(key, tuple) else str(key).rsplit("/", 1)[-1]
    return int(name.lstrip("s")) + 1


def run_numbers(search):
    """{avg_sct, avg_cct, makespan, bound, stages: {k: mean SCT}} of one search summary."""
    by_stage = {}
    for key, sct in (search.get("sct") or {}).items():
        by_stage.setdefault(stage_number(key), []).append(sct)
    makespan = list((search.get("makespan") or {}).values())
    return {"avg_sct": search.get("avg_sct"), "avg_cct": search.get("avg_cct"),
            "makespan": statistics.fmean(makespan) if makespan else None,
            "bound": (search.get("lower_bound") or {}).get("avg_sct"),
            "stages": {k: statistics.fmean(v) for k, v in by_stage.items()}}


def rows_of(numbers, lost, gap):
    """One row per policy of {policy: {seed: run_numbers}} and {policy: failed runs}."""
    out = []
    base = numbers.get(BASE, {})
    for policy in POLICIES:
        mine = numbers.get(policy, {})
        if not mine and not lost.get(policy):
            continue
        runs = list(mine.values())
        row = {"task_gap_s": gap, "policy": policy, "runs": len(runs), "failed": lost.get(policy, 0),
               **spread("avg_sct", describe([m["avg_sct"] for m in runs]), "_s"),
               # > 1: this policy's average SCT is that many times Beamer's on the same seed.
               **spread("over_beamer", paired(mine, base, "avg_sct")),
               "lower_bound_s": describe([m["bound"] for m in runs])["median"],
               "over_bound_median": describe([ratio(m["avg_sct"], m["bound"]) for m in runs])["median"],
               "avg_cct_median_s": describe([m["avg_cct"] for m in runs])["median"],
               "makespan_median_s": describe([m["makespan"] for m in runs])["median"]}
        for k in range(1, MAX_STAGES + 1):
            row[f"stage{k}_sct_median_s"] = describe([m["stages"].get(k) for m in runs])["median"]
        out.append(row)
    return out


def split(setting):
    """(policy, seed) of a sweep setting."""
    return setting["variant"]["name"], setting.get("search.seed", 0)


def table(runs_dir):
    """The testbed's rows (COLUMNS), from the runs' records alone."""
    kept, failed = records.load(runs_dir)
    numbers = {policy: runs for (policy,), runs in
               records.by_seed(kept, split, lambda r: run_numbers(r.summary["search"])).items()}
    lost = {}
    for f in failed:
        policy = split(f["setting"])[0]
        lost[policy] = lost.get(policy, 0) + 1
    return rows_of(numbers, lost, 0.0)         # the recipe starts its searches together


def simulate_one(params, policy):
    """run_numbers of one simulated search under one policy of POLICIES."""
    workload = SearchWorkload(params)
    bound = search_bounds(workload)["avg_sct"]
    name, options = POLICIES[policy]
    result = simulate(make_policy(name, **options), workload.fabric, workload)
    return {"avg_sct": result.avg_sct, "avg_cct": result.avg_cct, "bound": bound,
            "makespan": statistics.fmean(result.makespan.values()),
            "stages": {k: statistics.fmean(v) for k, v in _by_stage(result.sct).items()}}


def _by_stage(sct):
    out = {}
    for key, value in sct.items():
        out.setdefault(stage_number(key), []).append(value)
    return out


def simulated(scale=SIM_SCALE, seeds=SIM_SEEDS, gaps=SIM_GAPS):
    """The simulator's rows (COLUMNS) for each gap between the searches' starts."""
    out = []
    for gap in gaps:
        numbers = {p: {seed: simulate_one(SearchParams(**scale, task_gap=gap, seed=seed), p)
                       for seed in seeds} for p in POLICIES}
        out.extend(rows_of(numbers, {}, gap))
    return out


def keep_records(rows, runs_dir):
    # A search run has no iterations or evaluations: its summary is its record.
    records.keep(rows, runs_dir, steps=lambda run, summary: [])


def _triple(rows, policy, key, unit=""):
    """(min, median, max) of `key` in the policy's row, or None."""
    row = next((t for t in rows if t["policy"] == policy), None)
    return row and (row[f"{key}_min{unit}"], row[f"{key}_median{unit}"], row[f"{key}_max{unit}"])


def _stages(ax, rows, title):
    stages = [k for k in range(1, MAX_STAGES + 1) if any(t[f"stage{k}_sct_median_s"] for t in rows)]
    for i, policy in enumerate(POLICIES):
        row = next((t for t in rows if t["policy"] == policy), None)
        if row:
            ax.plot(stages, [row[f"stage{k}_sct_median_s"] for k in stages], marker="o", color=f"C{i}",
                    label=NAMES[policy])
    ax.set(xlabel="stage of a search", ylabel="average SCT (s), median of seeds", title=title)
    ax.set_xticks(stages)
    ax.grid(alpha=0.3)


def draw(rows, out_dir, recipe, scale=SIM_SCALE, seeds=SIM_SEEDS):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs_dir = os.path.join(out_dir, records.RUNS)
    keep_records(rows, runs_dir)
    bed = table(runs_dir)
    sim = simulated(scale, seeds)
    csv_path, sim_path = os.path.join(out_dir, "table.csv"), os.path.join(out_dir, "simulator.csv")
    write_table(bed, csv_path, COLUMNS)
    write_table(sim, sim_path, COLUMNS)
    together = [t for t in sim if t["task_gap_s"] == 0.0]
    apart = [t for t in sim if t["task_gap_s"] != 0.0]

    fig, ((bed_ax, sim_ax, over_ax), (bed_st, sim_st, apart_st)) = plt.subplots(2, 3, figsize=(17, 9))
    for ax, got, title in ((bed_ax, bed, "testbed"), (sim_ax, together, "simulator, searches together")):
        median_bars(ax, [title], [(NAMES[p], [_triple(got, p, "avg_sct", "_s")]) for p in POLICIES],
                    bounds=[[next((t["lower_bound_s"] for t in got if t["policy"] == p), None)]
                            for p in POLICIES])
        ax.set(ylabel="average SCT (s)", title=f"{title}: average SCT; dashes: the lower bound")
    over_ax.axhline(1, color="k", lw=0.8)
    median_bars(over_ax, ["testbed", "simulator,\ntogether", "simulator,\n30 s apart"],
                [(NAMES[p], [_triple(got, p, "over_beamer") for got in (bed, together, apart)])
                 for p in POLICIES])
    over_ax.set(ylabel="average SCT / Beamer's (per seed)", title="average SCT over Beamer's, same seed",
                ylim=(0.6, 1.6))
    over_ax.legend(fontsize=7, loc="upper center", ncol=2)
    _stages(bed_st, bed, "testbed: average SCT by stage")
    _stages(sim_st, together, "simulator, searches together: by stage")
    _stages(apart_st, apart, "simulator, 30 s apart: by stage")
    bed_st.legend(fontsize=7)
    fig.suptitle("Coflow policies on successive-halving searches: "
                 f"simulator {scale['tasks']} searches x {scale['configs']} configs on {scale['machines']} "
                 f"machines, {len(seeds)} seeds", fontsize=9)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path, csv_path, sim_path]
