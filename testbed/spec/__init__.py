"""topo.yaml -> a validated, frozen Spec (testbed/spec/topology.py), with
its sections: the experiment, a search instead, the dynamics; each checked
with one kit (validate.py).  Units are resolved here, once; the rest of
the testbed sees bit/s, seconds, bytes and fractions."""

from testbed.spec.topology import (
    TOP_KEYS,
    DataCenter,
    Direction,
    Lan,
    Spec,
    Tcp,
    WanLink,
    from_document,
    load,
    loads,
    parse_text,
    queue_bytes,
)
from testbed.spec.validate import SpecError

__all__ = ["TOP_KEYS", "DataCenter", "Direction", "Lan", "Spec", "SpecError", "Tcp", "WanLink",
           "load", "loads", "from_document", "parse_text", "queue_bytes"]
