"""One WAN over the machines of a cluster: where each DC goes, then each
machine's share built at once (testbed.spanning.network)."""

import secrets

from testbed.emulation.share import LINK_BITS, shares
from testbed.spanning import placement
from testbed.spanning.network import SpanningNetwork


class SpanError(ValueError):
    """The run cannot span the cluster as asked; one sentence."""


def refusal(spec):
    """Why this topology cannot span machines, or None."""
    exp = spec.experiment
    if spec.search is not None:
        return "a search: spans no machines yet; run it on one machine"
    if exp is not None and exp.programs:
        return "programs: run on one machine only; drop --cluster"
    if exp is not None and exp.coordination == "management":
        return ("coordination: management joins every router on one unshaped switch, "
                "which cannot span machines; drop it or --cluster")
    return None


def parse_pins(texts, machines):
    """{dc: machine} from --place DC=MACHINE texts."""
    pins = {}
    for text in texts:
        dc, sep, machine = text.partition("=")
        if not sep or not dc or not machine:
            raise SpanError(f"--place {text!r}: give DC=MACHINE, e.g. virginia={next(iter(machines))}")
        if machine not in machines:
            raise SpanError(f"--place {text!r}: no machine {machine!r} in the cluster; "
                            f"it has {', '.join(sorted(machines))}")
        pins[dc] = machine
    return pins


def layout(spec, cluster, pins=()):
    """The placement {dc: machine} of spec's DCs on the cluster's machines."""
    why = refusal(spec)
    if why:
        raise SpanError(why)
    pinned = parse_pins(pins, cluster.machines)
    unknown = sorted(set(pinned) - {dc.name for dc in spec.datacenters})
    if unknown:
        raise SpanError(f"--place names {unknown[0]!r}, which is not a data center of {spec.name}")
    machines = [placement.Machine(name, cluster.cores[name]) for name in sorted(cluster.machines)]
    try:
        return placement.place(spec, machines, placement.COST_PER_FRAME, pinned=pinned).machine_of
    except placement.PlacementError as e:
        raise SpanError(str(e)) from None


def build(spec, cluster, machine_of, delay_backend="auto", link_log=None, run_dir=None,
          text=None, overrides=()):
    """The SpanningNetwork of spec over the cluster, built; text and
    overrides: what spec was read from, if not its file alone."""
    base = 1 + secrets.randbelow((1 << (24 - LINK_BITS)) - 1)
    parts = shares(spec, machine_of, cluster.underlay(), base)
    used = {m: s for m, s in parts.items() if s.dcs}
    net = SpanningNetwork(spec, {m: cluster.machines[m] for m in used}, used, link_log,
                          text=text, overrides=overrides)
    return net.build(delay_backend, run_dir)
