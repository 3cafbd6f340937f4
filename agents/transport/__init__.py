"""The transport between agents (ZeroMQ): `Endpoint` sends and receives
messages of a JSON header and a tensor; `framing` cuts them into chunks
and puts them together, `outbox` queues and paces what waits for a peer,
`liveness` tells a dead peer from a slow one.  It knows nothing about
algorithms (as ps-lite's van)."""

from agents.transport.endpoint import Endpoint, RecvTimeout
from agents.transport.framing import XFER_LOG_MIN_BYTES, Message, split
from agents.transport.liveness import PeerDead
from agents.transport.outbox import PACE_CATCH_UP

__all__ = ["Endpoint", "RecvTimeout", "Message", "split", "XFER_LOG_MIN_BYTES", "PeerDead",
           "PACE_CATCH_UP"]
