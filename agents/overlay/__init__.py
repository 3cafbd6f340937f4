"""Overlay schemes: who sends which keys to whom.  A plan is pure data."""

from agents.overlay import ps

OVERLAYS = {"ps": ps}
