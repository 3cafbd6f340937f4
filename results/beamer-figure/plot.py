"""beamer-figure: fair sharing, FIFO-LM, Sincronia and Beamer on a
successive-halving hyper-parameter search, on the emulated network (top
row, from the sweep's runs) and in the fluid simulator at a scale the
emulator cannot hold (bottom row, computed here, several seeds).  Per
source: each policy's average stage completion time (SCT) over Beamer's,
the CDF of SCTs, and the average SCT over its lower bound (no schedule
beats the bound, so 1 would be optimal).

table.csv: one row per (source, seed, policy) with the average SCT, its
ratio to Beamer's in the same source and seed, the average coflow
completion time (CCT), the mean makespan of a search, the lower bound on
the average SCT and the ratio to it.
"""

import os
import statistics

from agents.coflow.policies import make_policy
from agents.coflow.search import SearchParams, SearchWorkload
from testbed.analysis.stats import describe, write_table
from testbed.coflow.bounds import search_bounds
from testbed.coflow.simulator import simulate
from testbed.records.runfolder import RunFolder

POLICIES = ("fair", "fifo-lm", "sincronia", "beamer")
NAMES = {"fair": "fair", "fifo-lm": "FIFO-LM", "sincronia": "Sincronia", "beamer": "Beamer"}
BASE = "beamer"
SOURCES = ("testbed", "simulator")
COLUMNS = ("source", "seed", "policy", "avg_sct", "avg_sct_over_beamer", "avg_cct", "makespan",
           "lower_bound", "avg_sct_over_bound")

# The simulated search: 8 concurrent searches of 16 configurations each (128 jobs at the
# start), halving every stage (iterations 1, 2, 4, 8, 16), each job a PS and 4 workers on
# distinct machines of 32.  Port capacity 1 per second is a 1 Gbit/s NIC, so a size unit is
# 1 Gbit: fp32 models from the zoo (17-528 MB) times 8 / 1000.
SIM_SCALE = {"tasks": 8, "configs": 16, "eta": 2, "iterations": 1, "workers": 4, "machines": 32,
             "scale": 0.008, "compute": (0.5, 2.0)}
SIM_SEEDS = (0, 1, 2, 3, 4)
CDF_SEED = 0


# ---- pure: normalization, spread over seeds, CDF ----

def normalize(table, base=BASE):
    """Adds avg_sct_over_beamer (avg SCT / the base policy's, same source and
    seed; None without it) and avg_sct_over_bound to each row, in place."""
    base_sct = {(r["source"], r["seed"]): r["avg_sct"] for r in table if r["policy"] == base}
    for r in table:
        b = base_sct.get((r["source"], r["seed"]))
        r["avg_sct_over_beamer"] = r["avg_sct"] / b if b and r["avg_sct"] is not None else None
        bound = r.get("lower_bound")
        r["avg_sct_over_bound"] = (r["avg_sct"] / bound
                                   if bound and r["avg_sct"] is not None else None)
    return table


def spread(table, source, key):
    """{policy: describe(key over the source's seeds)} for policies with a value."""
    out = {}
    for policy in POLICIES:
        d = describe([r[key] for r in table if r["source"] == source and r["policy"] == policy])
        if d["n"]:
            out[policy] = d
    return out


def cdf(values):
    """(sorted values, fraction of values <= each)."""
    xs = sorted(values)
    return xs, [(i + 1) / len(xs) for i in range(len(xs))]


def _mean(values):
    values = list(values)
    return statistics.fmean(values) if values else None


# ---- the simulator's part ----

def simulate_search(params, policy):
    """One search under one policy: (table row, [SCT of every stage])."""
    workload = SearchWorkload(params)
    bound = search_bounds(workload)["avg_sct"]
    result = simulate(make_policy(policy), workload.fabric, workload)
    row = {"source": "simulator", "seed": params.seed, "policy": policy,
           "avg_sct": result.avg_sct, "avg_cct": result.avg_cct,
           "makespan": _mean(result.makespan.values()), "lower_bound": bound}
    return row, list(result.sct.values())


def simulator_part(scale=SIM_SCALE, seeds=SIM_SEEDS):
    """(table rows, {policy: SCTs of the first seed}) of every policy and seed."""
    table, scts = [], {}
    for seed in seeds:
        for policy in POLICIES:
            row, sct = simulate_search(SearchParams(**scale, seed=seed), policy)
            table.append(row)
            if seed == seeds[0]:
                scts[policy] = sct
    return table, scts


# ---- the testbed's part ----

def _run_seed(row, folder):
    if row.get("search.seed") is not None:
        return row["search.seed"]
    return ((folder.read_json("spec.json", {}).get("search") or {}).get("params") or {}).get("seed")


def testbed_part(rows):
    """(table rows, {policy: SCTs of every run}) of the runs that left a search summary."""
    table, scts = [], {}
    for r in rows:
        if not r.get("run"):
            continue
        folder = RunFolder(r["run"])
        search = folder.read_json("summary.json", {}).get("search")
        if not search or search.get("avg_sct") is None:
            continue
        policy = search.get("policy") or r.get("search.policy")
        table.append({"source": "testbed", "seed": _run_seed(r, folder), "policy": policy,
                      "avg_sct": search["avg_sct"], "avg_cct": search.get("avg_cct"),
                      "makespan": _mean((search.get("makespan") or {}).values()),
                      "lower_bound": (search.get("lower_bound") or {}).get("avg_sct")})
        scts.setdefault(policy, []).extend((search.get("sct") or {}).values())
    return table, scts


# ---- the figure ----

def _bars(ax, stats, ylabel, title, line=None):
    policies = [p for p in POLICIES if p in stats]
    if not policies:
        ax.text(0.5, 0.5, "no completed run", ha="center", va="center", transform=ax.transAxes)
        ax.set(title=title)
        return
    means = [stats[p]["mean"] for p in policies]
    err = [[m - stats[p]["min"] for p, m in zip(policies, means)],
           [stats[p]["max"] - m for p, m in zip(policies, means)]]
    ax.bar(range(len(policies)), means, yerr=err, capsize=4,
           color=[f"C{POLICIES.index(p)}" for p in policies])
    for x, m in enumerate(means):
        ax.annotate(f"{m:.2f}", (x, m), textcoords="offset points", xytext=(8, 3), fontsize=8)
    if line is not None:
        ax.axhline(line, color="k", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(policies)))
    ax.set_xticklabels([NAMES[p] for p in policies])
    ax.set(ylabel=ylabel, title=title)


def _cdfs(ax, scts, title):
    for policy in POLICIES:
        if scts.get(policy):
            xs, ps = cdf(scts[policy])
            ax.step(xs, ps, where="post", color=f"C{POLICIES.index(policy)}", label=NAMES[policy])
    if ax.lines:
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.text(0.5, 0.5, "no completed run", ha="center", va="center", transform=ax.transAxes)
    ax.set(xlabel="stage completion time (s)", ylabel="fraction of stages", title=title)
    ax.grid(alpha=0.3)


def sim_setting(scale, seeds):
    s = scale
    return (f"simulator: {s['tasks']} searches x {s['configs']} configs, eta {s['eta']}, "
            f"PS + {s['workers']} workers per job, {s['machines']} machines with 1 Gbit/s NICs, "
            f"{len(seeds)} seeds")


def testbed_setting(rows):
    """The emulated search as its first run's spec.json says, or None without a run."""
    for r in rows:
        if r.get("run"):
            spec = RunFolder(r["run"]).read_json("spec.json", {})
            s, rate = (spec.get("search") or {}).get("params") or {}, (spec.get("lan") or {}).get("rate")
            if s and rate:
                return (f"testbed: {s.get('tasks')} searches x {s.get('configs')} configs, "
                        f"eta {s.get('eta')}, PS + {s.get('workers')} workers per job, "
                        f"{s.get('machines')} hosts with {rate / 1e6:g} Mbit/s NICs")
    return None


def draw(rows, out_dir, recipe, scale=SIM_SCALE, seeds=SIM_SEEDS):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sim_table, sim_scts = simulator_part(scale, seeds)
    bed_table, bed_scts = testbed_part(rows)
    table = normalize(bed_table + sim_table)
    csv_path = os.path.join(out_dir, "table.csv")
    write_table(table, csv_path, COLUMNS)

    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    cdf_titles = {"testbed": "SCT CDF, every run",
                  "simulator": f"SCT CDF, seed {seeds[0]}"}
    for (norm, dist, bound), source, scts in zip(axes, SOURCES, (bed_scts, sim_scts)):
        _bars(norm, spread(table, source, "avg_sct_over_beamer"), "average SCT / Beamer's",
              f"{source}: average SCT over Beamer's (min-max over seeds)", line=1.0)
        _cdfs(dist, scts, f"{source}: {cdf_titles[source]}")
        _bars(bound, spread(table, source, "avg_sct_over_bound"), "average SCT / lower bound",
              f"{source}: distance from the lower bound", line=1.0)
    settings = [t for t in (testbed_setting(rows), sim_setting(scale, seeds)) if t]
    fig.suptitle("\n".join(["Coflow policies on successive-halving searches"] + settings), fontsize=9)
    fig.tight_layout()
    path = os.path.join(out_dir, "figure.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path, csv_path]
