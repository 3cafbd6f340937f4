"""Coflow policies: whose turn it is when several jobs share the WAN.  The
contract is `base.Policy`; built-ins are registered below by
`module:Class` exactly as a user's plug-in is named."""

from agents.coflow.policies.base import Policy
from agents.plugins import Registry, check_options

COFLOW = Registry("coflow", Policy, {
    "fair": "agents.coflow.policies.fair:Fair",
    "fifo-lm": "agents.coflow.policies.fifo_lm:FifoLM",
    "sincronia": "agents.coflow.policies.sincronia:Sincronia",
    "beamer": "agents.coflow.policies.beamer:Beamer",
    "varys": "agents.coflow.policies.varys:Varys",
}, what="coflow policy")


def make_policy(name, **params):
    """A fresh policy object with checked options; agents.plugins.PluginError
    or OptionError (both ValueErrors) with one sentence otherwise."""
    cls, _ = COFLOW.load(name)
    return cls(**check_options(cls.OPTIONS, params, cls.NAME))
