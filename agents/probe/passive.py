"""Passive measurements: the goodput of real model transfers, as the agents
log them (`xfer` events), read from their event files as they grow."""

from agents.events import EventTail


class PassiveReader:
    """New `xfer` events from the event files of the agents in this DC."""

    def __init__(self, paths, dc_of):
        self.tails = [EventTail(p) for p in paths]
        self.dc_of = dc_of

    def read(self):
        out = []
        for tail in self.tails:
            for e in tail.read():
                src = self.dc_of.get(e.get("peer")) if e.get("ev") == "xfer" else None
                if src:
                    out.append((src, e["t"], e["goodput"]))
        return out
