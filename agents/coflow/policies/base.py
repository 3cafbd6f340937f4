"""The one interface every coflow policy offers, to the flow-level
simulator and to a search's live scheduler alike.

A policy sees the arrived, unfinished coflows (`active`: id -> Coflow, in
arrival order), the bytes left of each unfinished flow (`remaining`:
(coflow id, flow index) -> bytes; finished flows are absent) and the
`fabric` (ports and capacities), and answers:

- rates(now, active, remaining, fabric) -> {flow key: rate}
- order(now, active, remaining, fabric) -> coflow ids, highest priority
  first, or None for policies without an order.

on_arrival(coflow, now) and on_departure(coflow, now) tell it about events,
so it can keep state (an order recomputed only on events, sizes seen).
wake_up(now, active, remaining, rates) -> the time from now after which its
decision may change with no arrival or departure (a coflow turning heavy),
or None.
"""

import abc

from agents.coflow.allocation import greedy
from agents.plugins import Option


class Policy(abc.ABC):
    """A coflow policy is named in topo.yaml as `search.policy` (a built-in
    name, an entry point of the group `geo_testbed.coflow`, or
    `module:Class`) and gets its declared OPTIONS (`search.policy_options`)
    as keyword arguments."""

    NAME = ""
    DESCRIPTION = ""
    OPTIONS = ()
    # Whether a live scheduler paces senders at the rates given; False: the
    # rates only model what the network does on its own (TCP's sharing).
    PACED = True

    def on_arrival(self, coflow, now):
        pass

    def on_departure(self, coflow, now):
        pass

    def order(self, now, active, remaining, fabric):
        return None

    @abc.abstractmethod
    def rates(self, now, active, remaining, fabric):
        """{flow key: rate} for every flow to send now."""

    def wake_up(self, now, active, remaining, rates):
        return None


def remaining_sizes(coflow, remaining):
    return [remaining.get((coflow.id, i), 0.0) for i in range(len(coflow.flows))]


REORDER = ("arrivals", "events")


def reorder_option(default):
    return Option("reorder", default, "recompute the order on arrivals only, or on every "
                  "arrival and departure", choices=REORDER)


class OrderedPolicy(Policy):
    """An order recomputed when coflows arrive (`reorder="arrivals"`) or on
    every arrival and departure (`reorder="events"`), from the state at the
    first decision after the event; then greedy order-preserving,
    work-conserving rates."""

    OPTIONS = (reorder_option("events"),)

    def __init__(self, reorder=None):
        reorder = reorder or self.OPTIONS[-1].default
        if reorder not in REORDER:
            raise ValueError(f"reorder must be one of {', '.join(REORDER)}, not {reorder!r}")
        self.reorder = reorder
        self._order = None

    def on_arrival(self, coflow, now):
        self._order = None

    def on_departure(self, coflow, now):
        if self.reorder == "events":
            self._order = None

    @abc.abstractmethod
    def compute_order(self, now, active, remaining, fabric):
        """Coflow ids, highest priority first."""

    def order(self, now, active, remaining, fabric):
        if self._order is None:
            self._order = self.compute_order(now, active, remaining, fabric)
        return [c for c in self._order if c in active]

    def rates(self, now, active, remaining, fabric):
        return greedy(self.order(now, active, remaining, fabric), active, remaining, fabric)[0]
