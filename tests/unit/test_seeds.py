"""What an experiment's seed changes: the synthetic gradients' values and the
delay line's random draws (jitter, loss)."""

import textwrap

import numpy as np

from agents.config import WorkloadSettings
from agents.workload import parameters_for, workload_of
from testbed import spec as S
from testbed.emulation.delay import link_seed


def synthetic_gradients(seed, rank=0):
    w = WorkloadSettings(kind="synthetic", model="flat-1000", compute_time=0.0, seed=seed)
    return workload_of(w).trainer(rank, 2, 1.0, parameters_for(w)).grads


def test_two_seeds_give_different_synthetic_gradients_and_one_seed_the_same():
    one, again, other = synthetic_gradients(1), synthetic_gradients(1), synthetic_gradients(2)
    assert one.keys() == other.keys()
    for key in one:
        assert np.array_equal(one[key], again[key])
        assert not np.array_equal(one[key], other[key])
        assert one[key].dtype == np.float32 and one[key].size == 1000


def test_two_workers_of_one_run_send_different_gradients():
    a, b = synthetic_gradients(0, rank=0), synthetic_gradients(0, rank=1)
    assert all(not np.array_equal(a[k], b[k]) for k in a)


def with_seed(seed):
    return S.loads(textwrap.dedent(f"""
    datacenters: [{{name: a, workers: 1, servers: 1}}, {{name: b, workers: 1}}, {{name: c}}]
    wan: [{{between: [a, b], bw: 10mbit, loss: 1%}}, {{between: [b, c], bw: 10mbit}}]
    experiment: {{sync: ssgd, overlay: ps, server_dc: a, workload: synthetic, model: flat-1000,
                  seed: {seed}}}
    """))


def test_the_delay_line_seed_follows_the_experiment_seed_and_differs_per_link():
    seeds = {(s, i): link_seed(with_seed(s), i) for s in (0, 1, 2) for i in (0, 1)}
    assert len(set(seeds.values())) == len(seeds)
    assert link_seed(with_seed(1), 0) == link_seed(with_seed(1), 0)


def test_a_network_without_an_experiment_still_gets_a_seed_per_link():
    net_only = S.loads("datacenters: [{name: a}, {name: b}]\nwan: [{between: [a, b], bw: 10mbit}]")
    assert link_seed(net_only, 0) != link_seed(net_only, 1)
