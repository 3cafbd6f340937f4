"""The planner's options, typed: one dataclass, each field declared with its
range and one line of help (the docs and the validator read them)."""

from dataclasses import dataclass, fields

from agents.plugins import declared, option_field

DISPATCH = ("off", "fixed", "vegas", "steer")


@dataclass(frozen=True)
class PlannerOptions:
    # The packing and the slices it is cut into.
    keep: int = option_field(2, "trees kept per root and kind at most (each count up to it is "
                                "solved, the soonest kept)", low=1, high=64)
    trade_rate: int = option_field(1, "also solve packings that give up 10-50% of the rate for "
                                      "shallower trees (1) or not (0)", low=0, high=1)
    pipeline: int = option_field(4, "segments per hop of a slice's deepest path, at least",
                                 low=1, high=1024)
    min_segment: int = option_field(4096, "elements per segment, at least", low=1, high=10**9)
    fill_aware: float = option_field(1.0, "share of each slice's fill (store-and-forward plus "
                                          "delay) its size counts (0: by rate alone)",
                                     low=0.0, high=1.0)
    # Pacing.
    pace: int = option_field(1, "pace each connection at its planned load (1) or leave TCP to "
                                "share (0)", low=0, high=1)
    pace_share: float = option_field(1.0, "paced connections run at this times their planned load",
                                     low=0.1, high=10.0)
    # Re-planning from the probes.
    check_period: float = option_field(2.0, "seconds between two checks for a re-plan",
                                       low=0.1, high=3600.0)
    update_change: float = option_field(0.25, "re-plan when a link's estimate moved by more than "
                                              "this share", low=0.0, high=10.0)
    estimate_memory: float = option_field(8.0, "a pair's rate is the highest its trains read "
                                               "within this many seconds", low=0.0, high=3600.0)
    rtt_memory: float = option_field(60.0, "a pair's delay is half the least RTT read within this "
                                           "many seconds", low=0.0, high=3600.0)
    settle_readings: int = option_field(3, "trains an estimate needs before a plan on it stands",
                                        low=0, high=3)
    replan: int = option_field(1, "re-plan as estimates change (1) or keep the first plan (0)",
                               low=0, high=1)
    # A WAN whose rates change within an iteration.
    hold_iterations: float = option_field(2.0, "a WAN is volatile when its estimates step more "
                                               "often than once per this many iterations "
                                               "(0: never)", low=0.0, high=1000.0)
    volatile_memory: float = option_field(60.0, "seconds a volatile WAN's readings are kept",
                                          low=0.0, high=3600.0)
    volatile_pace: int = option_field(0, "pace connections on a volatile WAN too (1) or not (0)",
                                      low=0, high=1)
    trace_pieces: int = option_field(0, "log when each piece's segments arrived at every node",
                                     low=0, high=1)
    # Dispatch: blocks given to a family of slices while the iteration runs.
    dispatch: str = option_field("off", "fixed shares (off), or blocks dispatched to a family of "
                                        "slices with fixed windows, Vegas' windows, or windows "
                                        "steered by the probes", choices=DISPATCH)
    dispatch_window: int = option_field(2, "blocks every slice gets at the start (fixed, vegas)",
                                        low=1, high=64)
    dispatch_block: int = option_field(1024, "elements per dispatched block", low=1, high=10**9)
    dispatch_alpha: float = option_field(1.0, "vegas: widen a window with fewer blocks queued",
                                         low=0.0, high=1000.0)
    dispatch_beta: float = option_field(3.0, "vegas: narrow a window with more blocks queued",
                                        low=0.0, high=1000.0)
    dispatch_window_max: int = option_field(64, "vegas: the widest window", low=1, high=4096)
    dispatch_headroom: float = option_field(2.0, "steer: a window is this times a slice's rate "
                                                 "over a block's round trip", low=0.1, high=100.0)
    dispatch_turnaround: float = option_field(0.2, "steer: seconds a block's round trip takes "
                                                   "besides propagation", low=0.0, high=60.0)

    @classmethod
    def of(cls, layout):
        """The options a layout carries, defaults filled in."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in layout.options.items() if k in known})


OPTIONS = declared(PlannerOptions)
DEFAULTS = {o.name: o.default for o in OPTIONS}


def option(layout, key):
    """One option as the layout carries it, default filled in."""
    return layout.options[key] if key in layout.options else DEFAULTS[key]
