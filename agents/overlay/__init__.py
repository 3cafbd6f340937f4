"""Overlay schemes: where each piece of the model goes.  Each module has
NAME, DESCRIPTION, OPTIONS (its parameters with defaults) and DYNAMIC; a
static one returns a Plan from `plan(layout)`, a dynamic one provides the
executor `Node` and the coordinator's `Policy`."""

from agents.overlay import mlnet, netstorm, optimal, ps, tsengine

OVERLAYS = {m.NAME: m for m in (ps, mlnet, tsengine, netstorm, optimal)}
