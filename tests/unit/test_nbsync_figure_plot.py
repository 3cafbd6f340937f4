"""The nbsync-figure recipe's table from hand-made records: per step time
and scheme the median and range of the times to accuracy over the seeds,
NBSync's speedup taken per seed, and a run that never reaches a level
counted as not reaching it."""

import json

import pytest

from tests.recipe_plot import load_plot
from tests.unit.test_overlay_compare_plot import record


@pytest.fixture(scope="module")
def plot():
    return load_plot("nbsync-figure")


def setting(scheme, step_ms, seed):
    return {"seed": seed, "variant": {"name": f"{scheme}-{step_ms}ms"}}


def rising(at):
    """Evaluations whose running median of three crosses 90% at `at` + 1 s."""
    return [(at - 2, 0.5), (at - 1, 0.8), (at, 0.9), (at + 1, 0.95), (at + 2, 0.95)]


def test_nbsyncs_speedup_is_the_median_and_range_of_the_per_seed_ratios(plot, tmp_path):
    for seed, fedavg, nbsync in ((0, 30, 10), (1, 40, 8), (2, 60, 30)):
        record(tmp_path, f"fedavg_{seed}", setting("fedavg", 10, seed), [], rising(fedavg - 1))
        record(tmp_path, f"nbsync_{seed}", setting("nbsync", 10, seed), [], rising(nbsync - 1))
    # At 160 ms one FedAvg run never passes 80%.
    record(tmp_path, "slow_fedavg_0", setting("fedavg", 160, 0), [], [(1, 0.5), (2, 0.8), (3, 0.8)])
    record(tmp_path, "slow_fedavg_1", setting("fedavg", 160, 1), [], rising(19))
    record(tmp_path, "slow_nbsync_0", setting("nbsync", 160, 0), [], rising(9))
    (tmp_path / "failed.json").write_text(json.dumps([{"label": "x", "setting": setting("nbsync", 160, 1)}]))
    got = {(t["fastest_step_ms"], t["scheme"]): t for t in plot.table(str(tmp_path))}
    fedavg = got[(10, "fedavg")]
    assert (fedavg["tta_90_min_s"], fedavg["tta_90_median_s"], fedavg["tta_90_max_s"]) == (30, 40, 60)
    # Per seed 30/10, 40/8, 60/30; the ratio of the medians (40/10) is not one of them.
    assert (fedavg["nbsync_speedup_90_min"], fedavg["nbsync_speedup_90_median"],
            fedavg["nbsync_speedup_90_max"]) == (pytest.approx(2), pytest.approx(3), pytest.approx(5))
    assert got[(10, "nbsync")]["nbsync_speedup_90_median"] == 1
    assert fedavg["slowest_step_ms"] == 80 and fedavg["tta_90_reached"] == "3/3"
    slow = got[(160, "fedavg")]
    assert slow["tta_90_reached"] == "1/2" and slow["tta_90_median_s"] == 20
    # Seed 0's FedAvg never reached 90%, seed 1's NBSync failed: no pair.
    assert slow["nbsync_speedup_90_median"] is None
    assert got[(160, "nbsync")]["failed"] == 1
    # The table runs from compute-bound to sync-bound.
    assert [t["fastest_step_ms"] for t in plot.table(str(tmp_path))] == [160, 160, 10, 10]
