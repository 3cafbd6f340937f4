"""Statistics for repeated runs: medians with min/max, means with a 95%
confidence interval (Student's t), and grouping of sweep rows."""

import csv
import math
import statistics

# Two-sided 95% quantiles of Student's t by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    for k in sorted(T95):
        if df <= k:
            return T95[k]
    return 1.96


def describe(values):
    """{n, median, min, max, mean, ci95} of the numbers that are not None;
    ci95 is the half-width of the mean's interval (None for fewer than 2)."""
    xs = [v for v in values if v is not None]
    if not xs:
        return {"n": 0, "median": None, "min": None, "max": None, "mean": None, "ci95": None}
    ci = t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else None
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs),
            "mean": statistics.fmean(xs), "ci95": ci}


def group(rows, by, metric):
    """[(values of `by`, describe(metric))] in first-seen order."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in by), []).append(r.get(metric))
    return [(k, describe(v)) for k, v in groups.items()]


def ratio(a, b):
    """a / b for two numbers of the same metric, None if either is missing."""
    return a / b if a is not None and b else None


def spread(prefix, described, unit=""):
    """A table's PREFIX_median, PREFIX_min and PREFIX_max columns (each
    followed by `unit`) of a describe() result."""
    return {f"{prefix}_{stat}{unit}": described[stat] for stat in ("median", "min", "max")}


def paired(numerators, denominators, key):
    """describe() of the per-seed ratios numerators[seed][key] /
    denominators[seed][key], over the seeds both have ({seed: numbers}):
    a speedup taken between runs that met the same draws."""
    return describe([ratio(numerators[seed][key], denominators[seed][key])
                     for seed in numerators if seed in denominators])


BOUND_COLUMNS = ("bound_s", "median_over_bound", "t_lb_s", "t_opt_s", "median_over_t_lb",
                 "t_lb_as_run_s", "median_over_t_lb_as_run")


def bounds_against(runs, sync_median):
    """BOUND_COLUMNS for a setting's completed runs (sweep rows): the median
    over them of the cut bound, t_lb and t_opt their summaries carry (the
    same in every run of a setting, drawn from the links as configured),
    and `sync_median` over the cut bound and over t_lb; for runs whose
    links changed, the medians over them of t_lb on the links as they were
    while each synchronization ran and of each run's sync over it (its own
    median of each iteration against its links; report.bounds_as_run)."""
    def median(key):
        return describe([r.get(key) for r in runs])["median"]
    cut, t_lb = median("sync_bound"), median("sync_t_lb")
    return {"bound_s": cut, "median_over_bound": ratio(sync_median, cut), "t_lb_s": t_lb,
            "t_opt_s": median("sync_t_opt"), "median_over_t_lb": ratio(sync_median, t_lb),
            "t_lb_as_run_s": median("sync_t_lb_as_run"),
            "median_over_t_lb_as_run": median("sync_over_t_lb_as_run")}


def write_table(rows, path, columns):
    """rows (dicts) as CSV with these columns; floats to 4 significant digits."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for row in rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()})
