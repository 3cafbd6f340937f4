"""Which trees the report draws, from hand-built events."""

from testbed.analysis.overlay_plot import positions, trees


def decision(it, kind, sender, receiver, piece=0):
    return {"ev": "decision", "it": it, "piece": piece, "decision": kind, "sender": sender,
            "receiver": receiver}


def test_a_static_plan_is_drawn_once_from_its_plan_event():
    plan = {"pieces": [{"start": 0, "stop": 4, "root": "s", "parent": {"w1": "w0", "w0": "s"},
                        "children": {"s": ["w0"], "w0": ["w1"]}}]}
    (title, agg, dist), = trees({"s": [{"ev": "plan", "overlay": "mlnet", "plan": plan}]})
    assert title.startswith("mlnet")
    assert agg == [("w0", "s"), ("w1", "w0")] and dist == [("s", "w0"), ("w0", "w1")]


def test_decisions_give_the_first_a_middle_and_the_last_round_of_piece_zero():
    events = {"c": [decision(it, "pair", "w0", "s") for it in range(5)]
              + [decision(it, "distribute", "s", "w0") for it in range(5)]
              + [decision(2, "pair", "w9", "s", piece=1)]}
    drawn = trees(events)
    assert [t for t, _, _ in drawn] == ["iteration 0", "iteration 2", "iteration 4"]
    assert drawn[1][1] == [("w0", "s")] and drawn[1][2] == [("s", "w0")]


def test_nothing_to_draw_without_a_plan_or_decisions():
    assert trees({"w": [{"ev": "iter", "it": 0}]}) == []


def test_agents_sit_around_their_dc_and_dcs_apart():
    pos = positions({"a": ["a-w0", "a-w1"], "b": ["b-w0"]})
    assert pos["b-w0"] == (-1.0, 1.2246467991473532e-16)
    ax, ay = pos["a-w0"]
    assert abs(ax - 1.18) < 1e-9 and abs(ay) < 1e-9
