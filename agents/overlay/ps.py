"""The parameter-server star (ps-lite / "MXNET" baseline): the model is cut
evenly across the server DC's servers, and every worker sends each piece
straight to its server and gets the new values straight back (trees of
depth one)."""

from agents.dataplane.plan import Piece, Plan, even_cuts
from agents.overlay.base import StaticOverlay


class PS(StaticOverlay):
    NAME = "ps"
    DESCRIPTION = "parameter-server star: workers push to and pull from the servers directly"
    PROVIDES = frozenset({"trees", "star"})

    def plan(self, layout):
        roots = layout.roots()
        workers = layout.worker_names
        pieces = [Piece(a, b, root, {w: root for w in workers}, {root: list(workers)})
                  for (a, b), root in zip(even_cuts(layout.size, len(roots)), roots)]
        return Plan(layout.size, tuple(workers), tuple(pieces)).validate()
