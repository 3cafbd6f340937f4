"""Overlays: where each piece of the model goes.  The contract is
`base.StaticOverlay` or `base.DynamicOverlay`; one module or package per
built-in overlay, registered below by `module:Class` exactly as a user's
plug-in is named."""

from agents.overlay.base import Overlay
from agents.plugins import Registry

OVERLAY = Registry("overlay", Overlay, {
    "ps": "agents.overlay.ps:PS",
    "mlnet": "agents.overlay.mlnet:MLNET",
    "tsengine": "agents.overlay.tsengine:TSEngine",
    "netstorm": "agents.overlay.netstorm:NetStorm",
    "planner": "agents.overlay.planner:Planner",
}, aliases={"optimal": ("planner", "overlay 'optimal' is deprecated: it is now called 'planner'")})
