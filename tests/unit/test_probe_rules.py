import pytest

from agents.probe import schedule
from agents.probe.carried import CarriedRates, rx_bytes
from agents.probe.estimator import Estimator
from agents.probe.sender import TrainSender, frames_in_flight
from agents.roles.probe import Trains, dispersion_rates

FRAME_BITS = 1514 * 8


def test_a_steady_train_gives_the_bottleneck_rate():
    gap = FRAME_BITS / 20e6                       # 20 Mbit/s: one frame every 0.6056 ms
    times = [i * gap for i in range(166)]         # ~100 ms
    capacity, available, coarse = dispersion_rates(times)
    assert capacity == pytest.approx(20e6) and available == pytest.approx(20e6) and not coarse


def test_cross_traffic_slows_the_train_but_not_the_capacity_estimate():
    gap = FRAME_BITS / 20e6
    times, t = [], 0.0
    for i in range(166):
        times.append(t)
        # 20 foreign frames squeeze in once, 30 ms into the train
        t += gap * (21 if i == 50 else 1)
    capacity, available, _ = dispersion_rates(times)
    assert capacity == pytest.approx(20e6, rel=0.01)
    # counted from frame 1, the last within the head's millisecond: 164 frames in 184 gaps
    assert available == pytest.approx(164 * FRAME_BITS / (184 * gap))


def test_a_shapers_burst_at_the_head_of_a_train_is_not_counted():
    # 2 Mbit/s behind HTB with a two-frame bucket: frames 0-2 leave at once
    # (the bucket and the frame in service), then one every 6.056 ms.  From
    # frame 0 that is 15 frames in 13 gaps, 15% over the rate; from frame 2,
    # the last of the head, 13 in 13.
    gap = FRAME_BITS / 2e6
    times = [0.0, 20e-6, 40e-6] + [40e-6 + k * gap for k in range(1, 14)]
    capacity, available, coarse = dispersion_rates(times)
    assert available == pytest.approx(2e6, rel=0.01) and capacity == pytest.approx(2e6, rel=0.01)
    assert not coarse


def test_a_head_frame_the_delay_line_released_a_tick_late_is_still_head():
    # 1 Mbit/s behind a two-frame bucket: frame 1 left with frame 0 but the
    # delay line released it on its next 1 ms tick, 1.05 ms later; then one
    # frame every 12.1 ms.  Counted from frame 0, 15 frames in 14.09 gaps
    # read 1.065 Mbit/s; from frame 1, 14 in 14.
    gap = FRAME_BITS / 1e6
    times = [0.0, 1.05e-3] + [1.05e-3 + k * gap for k in range(1, 15)]
    capacity, available, coarse = dispersion_rates(times)
    assert available == pytest.approx(1e6, rel=0.001) and capacity == pytest.approx(1e6, rel=0.001)
    assert not coarse


def test_a_short_train_is_coarse():
    assert dispersion_rates([0.0, 0.001, 0.002, 0.003])[2] is True


def test_a_start_up_train_released_in_one_clump_reads_huge_and_is_held_back():
    # The first train has 16 frames (nothing sizes it yet); a delay line that
    # read them late releases them back to back: 16 frames within 80 us.
    times = [i * 80e-6 / 15 for i in range(16)]
    capacity, _, coarse = dispersion_rates(times)
    assert capacity == pytest.approx(15 * FRAME_BITS / 80e-6)     # ~2.3 Gbit/s
    assert coarse
    e = Estimator(period=2.5)
    e.add_active(0.0, capacity, coarse=coarse)
    est = e.estimate(0.0)
    assert est["bw"] == pytest.approx(2.27e9, rel=0.01)           # still sizes the next train
    assert not est["settled"]                                     # but is not recorded
    gap = FRAME_BITS / 50e6                                       # the proper train: 50 Mbit/s
    capacity, available, coarse = dispersion_rates([i * gap for i in range(200)])
    e.add_active(2.5, capacity, available, coarse)
    est = e.estimate(2.5)
    assert est["settled"] and est["bw"] == pytest.approx(50e6)


def test_once_settled_a_coarse_sample_does_not_unsettle_the_estimate():
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    e.add_active(2, 5e6, coarse=True)
    assert e.estimate(2)["settled"]


def test_estimator_smooths_then_jumps_after_two_deviating_samples():
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    e.add_active(2, 18e6)                       # within 30%: the higher of 20 and 18
    assert e.bw == pytest.approx(20e6)
    e.add_active(3, 17e6)                       # the median of 20, 18 and 17
    assert e.bw == pytest.approx(18e6)
    e.add_active(4, 5e6)                        # one deviating sample is not believed
    assert e.bw == pytest.approx(18e6)
    e.add_active(6, 5.2e6)                      # two are: jump
    assert e.bw == pytest.approx(5.2e6)


def test_one_low_train_does_not_move_the_estimate_and_two_in_the_last_three_do():
    # A train a late shaper timer met reads low; the median of the last
    # three proper samples keeps it out (a mean of weight 1/2 would read 17.5),
    # and of two, the higher.
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    e.add_active(2, 20e6)
    e.add_active(4, 15e6)                       # 25% low: within the change share
    assert e.bw == 20e6
    e.add_active(6, 20e6)                       # median of 20, 15, 20
    assert e.bw == 20e6
    e.add_active(8, 16e6)
    e.add_active(10, 16e6)                      # a link that really slowed: 16 of 20, 16, 16
    assert e.bw == 16e6
    # A step starts the median over: the old level does not pull it back.
    e.add_active(12, 5e6)
    e.add_active(14, 5.2e6)                     # two agreeing, deviating: the estimate is 5.2
    e.add_active(16, 4.0e6)                     # the higher of 5.2 and 4.0
    assert e.bw == 5.2e6
    e.add_active(18, 5.0e6)                     # the median of 5.2, 4.0 and 5.0
    assert e.bw == 5.0e6


def test_a_coarse_sample_stands_in_until_a_proper_one():
    e = Estimator(period=2.0)
    e.add_active(0, 80e6, coarse=True)
    assert e.bw == 80e6
    e.add_active(2, 50e6)
    assert e.bw == 50e6


def test_coarse_samples_count_as_evidence_of_a_change_but_not_into_the_average():
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    e.add_active(2, 19e6, coarse=True)          # close: ignored by the average
    assert e.bw == 20e6
    e.add_active(4, 5e6, coarse=True)
    e.add_active(6, 5.1e6, coarse=True)         # two deviating, even coarse: jump
    assert e.bw == pytest.approx(5.1e6)


def test_two_deviating_samples_that_disagree_do_not_replace_the_estimate():
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    e.add_active(2, 60e6)                       # deviating up
    e.add_active(4, 5e6)                        # deviating down: the two disagree
    assert e.bw == 20e6
    e.add_active(6, 5.2e6)                      # agrees with 5e6 (4% apart): jump
    assert e.bw == pytest.approx(5.2e6)


def test_once_settled_a_train_released_in_a_clump_is_no_sample():
    # A 100-frame train, sized for 60 ms at 20 Mbit/s, arrives within 0.8 ms:
    # 99 frames / 0.8 ms = 1.5 Gbit/s.  Taken as samples, two in a row would replace the estimate.
    times = [i * 0.8e-3 / 99 for i in range(100)]
    capacity, available, coarse = dispersion_rates(times)
    assert capacity == pytest.approx(99 * FRAME_BITS / 0.8e-3) and coarse
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    for t in (2, 4):
        e.add_active(t, capacity, available, coarse, span=times[-1])
    assert e.bw == 20e6 and e.clumps == 2 and e.samples == 1
    e.add_active(6, 19e6, span=0.06)            # proper trains still count:
    e.add_active(8, 18e6, span=0.06)            # the median of 20, 19 and 18
    assert e.bw == pytest.approx(19e6) and e.samples == 3


def test_clumps_in_a_row_raise_the_estimate_until_trains_can_be_timed():
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    for t in (2, 4, 6):                         # a link 20x faster: 60 ms trains take 3 ms
        e.add_active(t, 400e6, coarse=True, span=0.003)
    assert e.bw == 40e6                         # doubled after the third
    # The next trains are sized for 40 Mbit/s (60 ms) and take 6 ms: timeable.
    e.add_active(8, 400e6, coarse=True, span=0.006)
    e.add_active(10, 410e6, coarse=True, span=0.006)
    assert e.bw == 410e6


def test_a_link_four_times_faster_is_followed_by_trains_sized_for_the_old_rate():
    e = Estimator(period=2.0)
    e.add_active(0, 20e6)
    e.add_active(2, 80e6, coarse=True, span=0.015)      # 60 ms at 20 Mbit/s in 15 ms
    e.add_active(4, 82e6, coarse=True, span=0.015)
    assert e.bw == 82e6


def test_a_finished_train_reports_its_span():
    trains = Trains()
    for seq, at in enumerate([0.003, 0.0, 0.001, 0.002] * 3):
        trains.add("a", 1, seq, 12, at + seq // 4 * 0.01)
    (src, capacity, available, coarse, span, got, count), = trains.finished(1.0)[0]
    assert (src, got, count) == ("a", 12, 12) and span == pytest.approx(0.023)


def test_a_train_that_lost_too_many_frames_to_be_timed_is_reported_lost():
    trains = Trains()
    for seq in (0, 7, 30):                         # 3 of 45 got through a full queue
        trains.add("a", 1, seq, 45, 0.05 * seq)
    for seq in range(8):                           # 8 of 45: enough to time
        trains.add("b", 2, seq, 45, 0.9 + 0.015 * seq)
    assert trains.finished(1.0) == ([], [])        # both may still be arriving
    timed, lost = trains.finished(1.9)
    assert [t[0] for t in timed] == ["b"] and lost == [("a", 3, 45)]
    assert trains.open == {}


def test_what_a_full_link_carried_replaces_the_estimate_once_a_second_reading_agrees():
    # A 5.5 Mbit/s link drops to 0.83 under a full load: trains are lost and
    # the link's counters say what it carries.
    e = Estimator(period=2.5)
    e.add_active(0, 5.5e6)
    e.add_carried(2.5, 0.83e6)
    assert e.bw == 5.5e6                           # one reading is not a change
    e.add_carried(5.0, 0.86e6)                     # agrees with 0.83 within 30%
    assert e.bw == 0.86e6 and e.coarse
    e.add_active(7.5, 0.84e6)                      # a timed train takes over at once
    assert e.bw == 0.84e6 and not e.coarse
    e.add_carried(10.0, 0.5e6)
    e.add_active(12.5, 0.85e6)                     # a stray low reading, then the truth
    assert e.bw == pytest.approx(0.85e6)           # the higher of the two timed trains


def test_a_carried_reading_within_the_change_share_leaves_the_estimate_alone():
    e = Estimator(period=2.5)
    e.add_carried(0, 3e6)                          # nothing to replace yet: ignored
    assert e.bw is None
    e.add_active(0, 1e6)
    e.add_carried(2.5, 1.2e6)
    e.add_carried(5.0, 1.25e6)
    assert e.bw == 1e6


def test_the_counters_of_a_link_give_what_it_carried_over_the_window():
    text = ("Inter-|   Receive    |  Transmit\n"
            " face |bytes    packets errs|bytes\n"
            "    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n"
            "r3-w2: {} 9 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n")
    readings = iter([1000, 1000 + 62500, 1000 + 2 * 62500, 1000 + 3 * 62500])
    rates = CarriedRates({"dc3": "r3-w2"}, read=lambda: text.format(next(readings)), window=1.0)
    assert rx_bytes(text.format(7)) == {"lo": 100, "r3-w2": 7}
    rates.sample(0.0)
    rates.sample(0.5)
    assert rates.rate("dc3", t=0.9) is None        # no sample a window old yet
    # From the sample at 0.5 s (the newest a window old) to 1.5 s.
    assert rates.rate("dc3", t=1.5) == pytest.approx(2 * 62500 * 8 / 1.0)
    assert rates.rate("dc9", t=2.0) is None        # no link of its own from dc9


def test_fresh_passive_goodput_is_a_floor_on_the_estimate():
    e = Estimator(period=2.0)
    e.add_active(0, 10e6)
    e.add_passive(1, 14.48e6)                   # payload rate -> wire: x 1514/1448
    est = e.estimate(1.5)
    assert est["bw"] == pytest.approx(15.14e6)
    assert e.estimate(20)["bw"] == 10e6          # stale after 3 periods


def test_rtt_is_the_median_of_the_last_five_and_confidence_decays_with_age():
    e = Estimator(period=2.0)
    for i, r in enumerate([0.08, 0.09, 0.5, 0.081, 0.082, 0.083]):
        e.add_rtt(i, r)
    e.add_active(0, 1e6)
    assert e.estimate(0)["rtt"] == 0.083         # of 0.09, 0.5, 0.081, 0.082, 0.083
    assert e.estimate(1)["confidence"] == pytest.approx(0.5)
    assert e.estimate(8)["confidence"] < 0.2


PAIRS = [schedule.Pair("a", "b", (("a", "b"),)), schedule.Pair("b", "a", (("b", "a"),)),
         schedule.Pair("a", "c", (("a", "b"), ("b", "c")))]


def test_trains_last_train_time_unless_the_budget_shared_on_a_link_says_less():
    # b->a alone on its link: 0.1 s at 20 Mbit/s = 165 frames
    assert schedule.train_plan(PAIRS[1], PAIRS, 20e6, 2.5, 0.05, 0.1) == (165, 1)
    # a->b shares link a->b with a->c: budget 5% x 2.5 s / 2 = 62.5 ms -> 103 frames
    assert schedule.train_plan(PAIRS[0], PAIRS, 20e6, 2.5, 0.05, 0.1) == (103, 1)


def test_a_link_too_slow_for_a_minimal_train_is_probed_less_often():
    # 1 Mbit/s, 0.1 s budget per period -> 8 frames < 16: every 2 periods
    assert schedule.train_plan(PAIRS[1], PAIRS, 1e6, 2.0, 0.05, 0.1) == (16, 2)


def test_a_link_shared_by_many_pairs_gets_full_trains_less_often_not_untimeable_ones():
    # 9 pairs on one link: 5% x 2.5 s / 9 = 13.9 ms a period, 22 frames at
    # 20 Mbit/s, too short to time.  A 60 ms train (ceil(99.07) = 100 frames)
    # every ceil(100 x 12112 / (20e6 x 0.01389)) = ceil(4.36) = 5 periods.
    crowded = [schedule.Pair(f"s{i}", "d", (("x", "y"),)) for i in range(9)]
    assert schedule.train_plan(crowded[0], crowded, 20e6, 2.5, 0.05, 0.1) == (100, 5)


def test_the_first_train_is_small_and_goes_at_once():
    assert schedule.train_plan(PAIRS[0], PAIRS, None, 2.5, 0.05, 0.1) == (16, 1)


def test_a_train_may_fill_its_first_links_queue():
    # 25 Mbit/s for 10 ms: one round trip is 62,500 bytes, 41.3 frames.
    assert frames_in_flight(62_500) == 41
    assert frames_in_flight(3 * 1514) == 3
    assert frames_in_flight(1000) == 2                # under a frame: still a train can start
    assert frames_in_flight(62_500, share=0.5) == 20


def test_the_sender_hands_over_every_frame_of_each_train_once():
    import socket
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    addr = rx.getsockname()
    sender = TrainSender("127.0.0.1", {addr: 62_500}, lambda *h: ",".join(map(str, h)).encode(), b";")
    done = sender.start(addr, 1, 30, 5.0) + sender.start(addr, 2, 3, 6.0) + sender.pump()
    got = [rx.recv(100).decode() for _ in range(33)]
    sender.close()
    rx.close()
    assert done == [(addr, 1, 30, 5.0), (addr, 2, 3, 6.0)] and sender.waiting() == []
    assert got == [f"1,{s},30,5.0;" for s in range(30)] + [f"2,{s},3,6.0;" for s in range(3)]


def test_an_estimate_also_gives_its_last_train_s_reading_while_the_median_holds():
    e = Estimator(period=2.0)
    for t, rate in ((0, 20e6), (2, 21e6), (4, 19e6)):
        e.add_active(t, rate)
    assert e.estimate(4)["active"] == 20e6 and e.estimate(4)["last"] == 19e6
    e.add_active(6, 5e6)                        # deviating: the median holds, the last train does not
    assert e.estimate(6)["active"] == 20e6 and e.estimate(6)["last"] == 5e6


def test_an_estimate_says_how_many_trains_its_median_holds():
    e = Estimator(period=2.0)
    readings = []
    for t, rate in ((0, 20e6), (2, 21e6), (4, 19e6), (6, 20e6), (8, 5e6), (10, 5.1e6)):
        e.add_active(t, rate)
        readings.append(e.estimate(t)["readings"])
    # The fifth deviates (pending), the sixth agrees with it: the median starts over.
    assert readings == [1, 2, 3, 3, 3, 1]


def test_a_steady_direction_is_read_on_the_steady_budget_until_a_train_deviates():
    # b->a alone on its link, 2.5 s periods, budget 5%, steady budget 2%.
    e = Estimator(period=2.5)

    def plan(t):
        est = e.estimate(t)
        return schedule.train_plan(PAIRS[1], PAIRS, est["bw"], 2.5,
                                   schedule.budget_for(est, 0.05, 0.02), 0.1)

    plans = []
    for t, rate in ((0, 5e6), (1, 5e6), (2, 4.9e6), (3, 2e6), (4, 2.05e6)):
        e.add_active(t, rate)
        plans.append((e.estimate(t)["steady"], plan(t)))
    # 5% of 2.5 s at 5 Mbit/s allows 125 ms: a 100 ms train (41 frames) every period.
    # 2% allows 50 ms, 20 frames, under the 60 ms (25 frames) a train needs:
    # 25 frames every ceil(25 x 12112 / (5e6 x 0.05)) = ceil(1.21) = 2 periods.
    # A deviating train (pending) restores the full budget at the old estimate;
    # once the step is confirmed the estimate starts over, not yet steady:
    # 2 Mbit/s for 100 ms is 16 frames, every period.
    assert plans == [(False, (41, 1)), (False, (41, 1)), (True, (25, 2)), (False, (41, 1)),
                     (False, (16, 1))]


def test_without_an_estimate_the_full_budget_holds():
    assert schedule.budget_for(None, 0.05, 0.02) == 0.05
    assert schedule.budget_for({"steady": False}, 0.05, 0.02) == 0.05
    assert schedule.budget_for({"steady": True}, 0.05, 0.02) == 0.02
