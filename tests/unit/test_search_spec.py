"""The search: section: what it accepts, and each mistake as one sentence at its path."""

import os

import pytest

from testbed import spec as S

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = """\
name: s
lan: {bw: 20mbit}
datacenters:
  - {name: cluster, servers: 2, workers: 4}
  - {name: office, workers: 1}
wan:
  - {between: [cluster, office], bw: 10mbit, delay: 10ms}
"""


def load(search):
    return S.loads(BASE + "search:\n" + "".join(f"  {line}\n" for line in search.splitlines()))


def test_the_shipped_search_parses_with_the_clusters_hosts_as_machines():
    spec = S.load(os.path.join(ROOT, "topologies", "hpsearch.yaml"))
    s = spec.search
    assert spec.experiment is None
    assert s.machines == ("cluster-s0", "cluster-s1", "cluster-w0", "cluster-w1", "cluster-w2",
                          "cluster-w3")
    assert (s.policy, s.params.tasks, s.params.configs, s.params.eta, s.params.workers) == \
        ("beamer", 2, 2, 2, 2)
    assert s.params.compute == (0.1, 0.3) and s.max_time == 120.0
    assert s.params.machines == 6


def test_defaults_pick_the_dc_with_most_hosts():
    s = load("policy: fair").search
    assert s.dc == "cluster" and s.chunk_bytes == 64 * 1024 and s.params.growth is None


@pytest.mark.parametrize("search,path,words", [
    ("policy: lifo", "search.policy",
     "unknown coflow policy 'lifo'; available: beamer, fair, fifo-lm, sincronia, varys"),
    ("dc: mars", "search.dc", "unknown data center 'mars'"),
    ("workers: 6", "search.workers", "a job's 6 workers and its PS need 7 hosts; cluster has 6"),
    ("eta: 1", "search.eta", "must be a whole number in 2..100"),
    ("compute: [1s, 100ms]", "search.compute", "the shortest is longer than the longest"),
    ("compute: 1s", "search.compute", "must be [shortest, longest]"),
    ("models: {big: 0}", "search.models", "sizes in MB above zero"),
    ("policy: beamer\npolicy_options: {ordering: random}", "search.policy_options.ordering",
     "'random' must be one of stages, coflows"),
    ("stop: {iterations: 3}", "search.stop.iterations", "unknown key"),
    ("configs: 0", "search.configs", "whole number in 1..10000"),
])
def test_each_search_mistake_names_its_path(search, path, words):
    with pytest.raises(S.SpecError) as e:
        load(search)
    assert e.value.path == path
    assert words in str(e.value)


def test_a_file_runs_an_experiment_or_a_search_not_both():
    with pytest.raises(S.SpecError) as e:
        S.loads(BASE + "experiment: {}\nsearch: {}\n")
    assert e.value.path == "search" and "not both" in str(e.value)
