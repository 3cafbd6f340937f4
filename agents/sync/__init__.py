"""Synchronization schemes: when workers compute and synchronize, what they
send, and how a root folds in what arrives.  The contract is
`base.SyncScheme`; one module per built-in scheme, registered below by
`module:Class` exactly as a user's plug-in is named."""

from agents.plugins import Registry
from agents.sync.base import SyncScheme

SYNC = Registry("sync", SyncScheme, {
    "ssgd": "agents.sync.ssgd:SSGD",
    "fedavg": "agents.sync.fedavg:FedAvg",
    "fedasync": "agents.sync.fedasync:FedAsync",
    "esync": "agents.sync.esync:ESync",
    "nbsync": "agents.sync.nbsync:NBSync",
})
