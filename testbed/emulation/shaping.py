"""The tc commands that shape one egress, in one place.

Every WAN direction is an HTB root with one class (the link's rate) and a
leaf qdisc: a byte FIFO sized to the direction's queue where a userspace
delay line adds the delay, or netem (delay, jitter, loss and the queue)
where the kernel has it.  Live changes use `change` on the same handles, so
queues and flows survive.  Functions here only build argument lists; the
caller runs them in the right namespace.
"""

FRAME_BYTES = 1514
# HTB's burst: enough bytes for about this long at the link's rate, so
# timer granularity cannot starve the class (Mininet's fixed 15 kB loses
# packets at high rates and bursts at low ones).
BURST_SECONDS = 0.001
MAX_QUANTUM = 200_000  # tc warns above this
ROOT = "1:"
CLASS = "1:1"
LEAF = "10:"


def htb_params(rate):
    """(burst, quantum) in bytes for an HTB class of `rate` bit/s."""
    burst = max(int(rate / 8 * BURST_SECONDS), 2 * FRAME_BYTES)
    quantum = min(MAX_QUANTUM, max(FRAME_BYTES, burst))
    return burst, quantum


def _class_args(rate):
    burst, quantum = htb_params(rate)
    return ["rate", f"{int(rate)}bit", "burst", str(burst), "cburst", str(burst),
            "quantum", str(quantum)]


def htb_setup(dev, rate):
    """Root HTB and the class every packet on `dev` goes through."""
    return [
        ["tc", "qdisc", "replace", "dev", dev, "root", "handle", ROOT, "htb", "default", "1"],
        ["tc", "class", "add", "dev", dev, "parent", ROOT, "classid", CLASS, "htb"] + _class_args(rate),
    ]


def htb_change(dev, rate):
    return ["tc", "class", "change", "dev", dev, "parent", ROOT, "classid", CLASS, "htb"] + _class_args(rate)


def fifo_leaf(dev, queue, verb="add"):
    """The bottleneck queue: a byte FIFO holding `queue` bytes."""
    return ["tc", "qdisc", verb, "dev", dev, "parent", CLASS, "handle", LEAF,
            "bfifo", "limit", str(int(queue))]


def netem_limit(direction):
    """netem's limit counts frames, and frames in flight (held for the delay)
    count against it too, so it is the queue plus the rate-delay product."""
    in_flight = direction.rate / 8 * (direction.delay + direction.jitter)
    return max(2, int((direction.queue + in_flight) / FRAME_BYTES) + 1)


def netem_leaf(dev, direction, verb="add"):
    args = ["tc", "qdisc", verb, "dev", dev, "parent", CLASS, "handle", LEAF, "netem",
            "limit", str(netem_limit(direction)),
            "delay", f"{round(direction.delay * 1e6)}us"]
    if direction.jitter:
        args.append(f"{round(direction.jitter * 1e6)}us")
    if direction.effective_loss:
        args += ["loss", f"{direction.effective_loss * 100:.6g}%"]
    return args

