"""Coflow policies by name; every one offers the interface of base.Policy."""

from agents.coflow.policies.beamer import Beamer
from agents.coflow.policies.fair import Fair
from agents.coflow.policies.fifo_lm import FifoLM
from agents.coflow.policies.sincronia import Sincronia
from agents.coflow.policies.varys import Varys

POLICIES = {p.name: p for p in (Fair, FifoLM, Sincronia, Beamer, Varys)}


def make_policy(name, **params):
    """A fresh policy object; ValueError with one sentence for an unknown name."""
    if name not in POLICIES:
        raise ValueError(f"unknown coflow policy {name!r}; choose one of {', '.join(POLICIES)}")
    return POLICIES[name](**params)
