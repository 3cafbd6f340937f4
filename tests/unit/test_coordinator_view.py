"""The coordinator's view of the network from the transfers agents logged."""

import json
import time

import zmq

from agents.config import Peer
from agents.probe import matrix
from agents.roles.coordinator import NetworkView


def test_transfers_are_keyed_by_sender_dc_and_receiving_dc(tmp_path):
    agents = [Peer("a-s0", "10.1.0.10", 7000, "a"), Peer("a-w0", "10.1.0.11", 7000, "a"),
              Peer("b-w0", "10.2.0.10", 7000, "b")]
    lines = {"a-s0": [{"ev": "xfer", "peer": "b-w0", "t": 1.0, "goodput": 4e6},
                      {"ev": "xfer", "peer": "a-w0", "t": 1.5, "goodput": 9e8},   # inside a
                      {"ev": "iter", "it": 0, "t": 2.0}],
             "b-w0": [{"ev": "xfer", "peer": "a-s0", "t": 1.0, "goodput": 3e6},
                      {"ev": "xfer", "peer": "a-w0", "t": 3.0, "goodput": 2e6}]}
    for name, events in lines.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    view = NetworkView([], 0, str(tmp_path), agents)
    assert view.update() is True
    # The latest transfer per direction; a DC's own LAN traffic is not a WAN direction.
    assert view.transfers == {"b->a": 4e6, "a->b": 2e6}
    assert view.update() is False                 # nothing new since
    with open(tmp_path / "b-w0.jsonl", "a") as f:
        f.write(json.dumps({"ev": "xfer", "peer": "a-w0", "t": 4.0, "goodput": 5e6}) + "\n")
    assert view.update() is True and view.transfers["a->b"] == 5e6


def test_the_probes_numbers_come_over_their_pub_socket_with_the_last_train_s_reading(tmp_path):
    pub = zmq.Context.instance().socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    view = NetworkView([Peer("b-p", "127.0.0.1", 0, "b")], port, str(tmp_path), [])
    try:
        est = {"bw": 8e6, "active": 8e6, "last": 6e6, "rtt": 0.05, "readings": 3, "settled": True}
        deadline = time.monotonic() + 10
        while "a->b" not in view.probes and time.monotonic() < deadline:     # a SUB joins late
            matrix.publish(pub, "b", 0.0, {"a": est})
            time.sleep(0.05)
            view.update()
        assert view.probes["a->b"] == {"active": 8e6, "last": 6e6, "rtt": 0.05, "readings": 3}
        assert view.estimates["a->b"] == 8e6
    finally:
        view.close()
        pub.close(0)
