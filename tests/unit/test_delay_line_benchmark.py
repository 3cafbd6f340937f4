"""The delay-line benchmark's accounting of other processes' CPU, which it
takes off the machine's busy time (benchmarks/delay_line.py)."""

from benchmarks.delay_line import others_used


def test_processes_present_throughout_count_their_growth_and_new_ones_all_they_used():
    before = {1: (10.0, 0), 50: (2.0, 1)}
    after = {1: (10.5, 0), 50: (2.25, 1), 70: (0.75, 50)}
    assert others_used(before, after) == 0.5 + 0.25 + 0.75


def test_a_process_reaped_meanwhile_counts_only_what_it_used_in_between():
    # 60 had used 3 s; it ran 1 s more and was reaped by 50, whose reaped
    # children's time grew by its whole 4 s.
    before = {50: (2.0, 1), 60: (3.0, 50)}
    after = {50: (6.0, 1)}
    assert others_used(before, after) == 1.0


def test_a_chain_reaped_meanwhile_is_taken_off_the_nearest_ancestor_still_there():
    # 9 -> 10 -> 11, both 10 and 11 gone: 9's reaped time grew by their
    # whole lives (1 + 2 + the 0.5 s they ran in between).
    before = {9: (0.0, 1), 10: (1.0, 9), 11: (2.0, 10)}
    after = {9: (3.5, 1)}
    assert others_used(before, after) == 0.5


def test_a_process_whose_ancestors_are_all_gone_is_not_taken_off_anything():
    before = {20: (5.0, 1), 21: (1.0, 20)}
    after = {}
    assert others_used(before, after) == 0.0
