"""The parameter-server star (ps-lite / "MXNET" baseline): every worker
pushes each server's keys straight to that server, and pulls them straight
back."""

from dataclasses import dataclass

NAME = "ps"
DESCRIPTION = "parameter-server star: workers push to and pull from the servers directly"


@dataclass(frozen=True)
class Transfer:
    src: str
    dst: str
    keys: tuple


def push_plan(workers, servers, owner):
    """[Transfer] for one aggregation: worker -> server of each key."""
    return [Transfer(w, s, tuple(k for k, i in owner.items() if i == j))
            for w in workers for j, s in enumerate(servers)]


def pull_plan(workers, servers, owner):
    """[Transfer] for one distribution: server -> every worker."""
    return [Transfer(s, w, tuple(k for k, i in owner.items() if i == j))
            for j, s in enumerate(servers) for w in workers]
