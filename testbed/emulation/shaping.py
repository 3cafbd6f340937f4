"""The tc commands that shape one egress, in one place.

Every egress is an HTB root with a class at the link's rate (1:1, whose
counters are the link's) and a leaf qdisc: a byte FIFO sized to the
direction's queue where a userspace delay line adds the delay, or netem
(delay, jitter, loss and the queue) where the kernel has it.  A WAN
egress splits its class in two: the data's (1:2, with that leaf) and the
agents' heartbeats' (1:3, marked LIVENESS_TOS by the transport), which
goes first whenever it has a frame and has a small queue of its own, so
a data queue held full by a saturating flow cannot starve the beats that
tell live peers from dead ones.  Its leaf delays and drops like the
data's.  Live changes use `change` on the same handles, so queues and
flows survive.  Functions here only build argument lists; the caller runs
them in the right namespace.
"""

from agents.transport.liveness import LIVENESS_TOS

FRAME_BYTES = 1514
# HTB's burst: enough bytes for about this long at the link's rate, so
# timer granularity cannot starve the class (Mininet's fixed 15 kB loses
# packets at high rates and bursts at low ones).
BURST_SECONDS = 0.001
MAX_QUANTUM = 200_000  # tc warns above this
ROOT = "1:"
CLASS = "1:1"
LEAF = "10:"
DATA_CLASS = "1:2"
LIVENESS_CLASS = "1:3"
LIVENESS_LEAF = "20:"
# The share of a WAN link's rate the heartbeats are guaranteed; being first,
# they take more when they need it, and the data takes what they leave.
LIVENESS_SHARE = 0.01
LIVENESS_QUEUE = 64 * FRAME_BYTES


def htb_params(rate):
    """(burst, quantum) in bytes for an HTB class of `rate` bit/s."""
    burst = max(int(rate / 8 * BURST_SECONDS), 2 * FRAME_BYTES)
    quantum = min(MAX_QUANTUM, max(FRAME_BYTES, burst))
    return burst, quantum


def _class_args(rate, ceil=None):
    burst, quantum = htb_params(rate)
    cburst = htb_params(ceil)[0] if ceil else burst
    return ["rate", f"{int(rate)}bit"] + (["ceil", f"{int(ceil)}bit"] if ceil else []) + \
        ["burst", str(burst), "cburst", str(cburst), "quantum", str(quantum)]


def htb_setup(dev, rate):
    """Root HTB and the class every packet on `dev` goes through."""
    return [
        ["tc", "qdisc", "replace", "dev", dev, "root", "handle", ROOT, "htb", "default", "1"],
        ["tc", "class", "add", "dev", dev, "parent", ROOT, "classid", CLASS, "htb"] + _class_args(rate),
    ]


def htb_change(dev, rate):
    return ["tc", "class", "change", "dev", dev, "parent", ROOT, "classid", CLASS, "htb"] + _class_args(rate)


def _wan_classes(verb, dev, rate):
    liveness = max(1.0, rate * LIVENESS_SHARE)
    return [
        ["tc", "class", verb, "dev", dev, "parent", ROOT, "classid", CLASS, "htb"] + _class_args(rate),
        ["tc", "class", verb, "dev", dev, "parent", CLASS, "classid", DATA_CLASS, "htb"]
        + _class_args(rate - liveness, ceil=rate) + ["prio", "1"],
        ["tc", "class", verb, "dev", dev, "parent", CLASS, "classid", LIVENESS_CLASS, "htb"]
        + _class_args(liveness, ceil=rate) + ["prio", "0"],
    ]


def wan_setup(dev, rate):
    """A WAN egress: the link's class split into the data's (the default)
    and the heartbeats', which frames marked LIVENESS_TOS (DSCP bits; ECN
    left out) go to.  Its leaves: wan_leaves."""
    return [["tc", "qdisc", "replace", "dev", dev, "root", "handle", ROOT, "htb",
             "default", DATA_CLASS.split(":")[1]]] + _wan_classes("add", dev, rate) + [
        ["tc", "filter", "add", "dev", dev, "parent", ROOT, "protocol", "ip", "prio", "1", "u32",
         "match", "ip", "tos", f"{LIVENESS_TOS:#x}", "0xfc", "flowid", LIVENESS_CLASS]]


def wan_change(dev, rate):
    """A WAN egress's classes at a new rate."""
    return _wan_classes("change", dev, rate)


def fifo_leaf(dev, queue, verb="add", parent=CLASS, handle=LEAF):
    """The bottleneck queue: a byte FIFO holding `queue` bytes."""
    return ["tc", "qdisc", verb, "dev", dev, "parent", parent, "handle", handle,
            "bfifo", "limit", str(int(queue))]


def netem_limit(direction):
    """netem's limit counts frames, and frames in flight (held for the delay)
    count against it too, so it is the queue plus the rate-delay product."""
    in_flight = direction.rate / 8 * (direction.delay + direction.jitter)
    return max(2, int((direction.queue + in_flight) / FRAME_BYTES) + 1)


def netem_leaf(dev, direction, verb="add", parent=CLASS, handle=LEAF):
    args = ["tc", "qdisc", verb, "dev", dev, "parent", parent, "handle", handle, "netem",
            "limit", str(netem_limit(direction)),
            "delay", f"{round(direction.delay * 1e6)}us"]
    if direction.jitter:
        args.append(f"{round(direction.jitter * 1e6)}us")
    if direction.effective_loss:
        args += ["loss", f"{direction.effective_loss * 100:.6g}%"]
    return args

