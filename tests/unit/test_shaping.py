from testbed.emulation import shaping
from testbed.spec import Direction


def test_htb_burst_covers_a_millisecond_at_the_rate():
    # 100 Mbit/s = 12.5 MB/s -> 12 500 bytes per ms; quantum follows the burst.
    assert shaping.htb_params(100e6) == (12_500, 12_500)


def test_slow_links_keep_a_burst_of_two_frames():
    assert shaping.htb_params(1e6) == (3028, 3028)


def test_fast_links_are_not_capped_at_one_gigabit_and_quantum_stays_below_tcs_limit():
    burst, quantum = shaping.htb_params(10e9)
    assert burst == 1_250_000
    assert quantum == 200_000


def test_htb_setup_commands_for_a_50mbit_egress():
    assert shaping.htb_setup("r0-w0", 50e6) == [
        ["tc", "qdisc", "replace", "dev", "r0-w0", "root", "handle", "1:", "htb", "default", "1"],
        ["tc", "class", "add", "dev", "r0-w0", "parent", "1:", "classid", "1:1", "htb",
         "rate", "50000000bit", "burst", "6250", "cburst", "6250", "quantum", "6250"],
    ]


def test_a_live_rate_change_is_a_class_change_on_the_same_handle():
    assert shaping.htb_change("r0-w0", 5e6) == [
        "tc", "class", "change", "dev", "r0-w0", "parent", "1:", "classid", "1:1", "htb",
        "rate", "5000000bit", "burst", "3028", "cburst", "3028", "quantum", "3028"]


def test_fifo_leaf_holds_the_queue_in_bytes():
    assert shaping.fifo_leaf("r0-w0", 250_000) == [
        "tc", "qdisc", "add", "dev", "r0-w0", "parent", "1:1", "handle", "10:", "bfifo",
        "limit", "250000"]
    assert shaping.fifo_leaf("r0-w0", 48_448, verb="change")[2] == "change"


def test_netem_leaf_carries_delay_jitter_loss_and_a_limit_for_frames_in_flight():
    d = Direction(rate=20e6, delay=0.04, jitter=0.005, loss=0.01, queue=200_000)
    # in flight: 20e6/8 * 0.045 = 112 500 B; (200 000 + 112 500) / 1514 = 206.4 -> 207
    assert shaping.netem_leaf("r0-w0", d) == [
        "tc", "qdisc", "add", "dev", "r0-w0", "parent", "1:1", "handle", "10:", "netem",
        "limit", "207", "delay", "40000us", "5000us", "loss", "1%"]


def test_netem_leaf_without_jitter_or_loss_says_only_delay():
    d = Direction(rate=10e6, delay=0.001, queue=48_448)
    cmd = shaping.netem_leaf("x", d, verb="change")
    assert cmd[2] == "change"
    assert cmd[-2:] == ["delay", "1000us"]
