from testbed.run.runner import Progress

AB = ("virginia", "tokyo")
BA = ("tokyo", "virginia")


def test_a_long_iteration_shows_the_bytes_the_wan_moved_since_the_last_one():
    p = Progress()
    assert "iter 0, 0.0 MB moved" in p.line(0.0, {AB: 40e6})
    # 40 + 40 Mbit/s for 1 s = 10 MB, then for 0.5 s more = 15 MB
    assert "iter 0, 10.0 MB moved" in p.line(1.0, {AB: 40e6, BA: 40e6})
    assert "iter 0, 15.0 MB moved" in p.line(1.5, {AB: 40e6, BA: 40e6})
    # an iteration ends: the count starts again
    p.take([{"ev": "iter", "it": 0, "sync": 1.2, "loss": 2.0}])
    assert "iter 1, 0.0 MB moved" in p.line(1.5, {AB: 8e6})
    assert "iter 1, 1.0 MB moved" in p.line(2.5, {AB: 8e6})


def test_an_event_of_an_older_iteration_does_not_reset_the_count():
    p = Progress()
    p.take([{"ev": "iter", "it": 4, "sync": 0.1}])
    p.line(0.0, {AB: 8e6})
    p.line(1.0, {AB: 8e6})
    p.take([{"ev": "iter", "it": 3, "sync": 0.1}])
    assert "iter 5, 1.0 MB moved" in p.line(1.0, {AB: 8e6})


def test_a_search_shows_the_stages_and_coflows_its_scheduler_finished():
    p = Progress()
    p.take([{"ev": "coflow_done"}, {"ev": "coflow_done"}, {"ev": "stage_done"},
            {"ev": "coflow_done"}])
    assert "1 stage, 3 coflows done" in p.line(2.0, {})
