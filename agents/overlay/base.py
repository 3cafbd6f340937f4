"""The contract of an overlay: where each piece of the model goes.

An overlay is a subclass of `StaticOverlay` or `DynamicOverlay` named in
topo.yaml as `experiment.overlay` (a built-in name, an entry point of the
group `geo_testbed.overlay`, or `module:Class`), with its options under
`experiment.overlay_options`.  Every agent builds its own instance from the
same options; the options also travel in the `Layout` every agent gets
(`layout.options`).

- A static overlay plans once: `plan(layout)` returns a `Plan`
  (agents/dataplane/plan.py), pure data that every agent computes alike,
  and the tree executor (`TreeNode`) carries it out.
- A dynamic overlay plans on the fly: `node(...)` gives each agent its
  executor (an `ExecutorNode`, agents/dataplane/node.py) and `policy(...)`
  gives the coordinator its side (a `CoordinatorService`,
  agents/coordination.py), which plans from the network's view and tells
  the nodes.

`PROVIDES` says what the overlay offers sync schemes (see
`agents.plugins.CAPABILITIES`); `refuse` says why a topology cannot run it.
"""

import abc

from agents.plugins import settings


class Overlay(abc.ABC):
    NAME = ""
    DESCRIPTION = ""
    OPTIONS = ()                          # (agents.plugins.Option, ...)
    PROVIDES = frozenset({"trees"})
    DYNAMIC = False

    def __init__(self, options=None):
        self.options = settings(self.OPTIONS, options)

    def refuse(self, servers, workers):
        """Why DCs with these numbers of servers and workers ({dc: n} each)
        cannot run this overlay, in one sentence, or None."""
        return None

    @abc.abstractmethod
    def takes_part(self, name, layout):
        """Whether agent `name` has a part in this overlay's plans."""


class StaticOverlay(Overlay):
    @abc.abstractmethod
    def plan(self, layout):
        """The Plan for `layout` (the model's size in `layout.size`)."""

    def takes_part(self, name, layout):
        return name in self.plan(layout).nodes


class DynamicOverlay(Overlay):
    DYNAMIC = True

    @abc.abstractmethod
    def node(self, name, layout, segment, fold, coordinator):
        """Agent `name`'s ExecutorNode: `segment` elements per message at
        most, `fold` the sync scheme's root side, `coordinator` the
        coordinator's agent name."""

    @abc.abstractmethod
    def policy(self, layout, seed=0):
        """The coordinator's CoordinatorService for this overlay."""
