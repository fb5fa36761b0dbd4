"""The inspector's budget cadence counts everything it spends, one-off traces included.

Pure arithmetic (no TensorFlow): the spacing and the credit follow from the costs
and training times given.
"""

from __future__ import annotations

import math

from tfstudio.engine.probes.cadence import FIRST_GAP, MIN_INTERVAL_S, OVERHEAD_BASIS_S, Cadence


def test_first_gap_while_the_step_time_is_unknown():
    cadence = Cadence(0.03)
    assert cadence.gap_after(0.010, None, train=0.5) == FIRST_GAP
    assert cadence.probe_seconds == 0.010


def test_a_trace_is_paid_back_before_the_next_sample():
    cadence = Cadence(0.03)
    cadence.gap_after(0.010, None, train=1.0)
    # A recording step that traced for 0.6 s, then a 5 ms sample, on 1 ms steps:
    cadence.charge(0.6)
    gap = cadence.gap_after(0.005, 0.001, train=1.1)
    # Training must reach (probe time + the next sample) / budget before the next sample.
    owed = (cadence.probe_seconds + 0.005) / 0.03 - 1.1
    assert gap == math.ceil(owed / 0.001)
    assert gap > 19_000
    # At that step the probes' share is back within the budget.
    assert (cadence.probe_seconds + 0.005) / (1.1 + gap * 0.001) <= 0.03


def test_without_debt_the_gap_keeps_each_sample_within_the_budget():
    cadence = Cadence(0.03, min_interval=0.0)
    cadence.gap_after(0.001, None, train=10.0)
    gap = cadence.gap_after(0.006, 0.002, train=10.0)
    assert gap == math.ceil(0.006 / (0.03 * 0.002))  # 100 steps of 2 ms per 6 ms sample
    assert not cadence.capped


def test_a_cheap_sample_comes_at_most_once_a_second_of_training():
    cadence = Cadence(0.03)  # default floor: MIN_INTERVAL_S
    cadence.gap_after(0.001, None, train=10.0)
    # A 6 ms sample on 2 ms steps: the budget allows one every 100 steps (0.2 s).
    gap = cadence.gap_after(0.006, 0.002, train=10.0)
    assert gap == math.ceil(MIN_INTERVAL_S / 0.002) and cadence.capped
    # A 90 ms sample on the same steps: the budget's spacing (3 s) is wider than the floor.
    gap = Cadence(0.03).gap_after(0.090, 0.002, train=10.0)
    assert gap == math.ceil(0.090 / (0.03 * 0.002))
    # Custom loops' spacing has the same floor.
    loop = Cadence(0.03)
    loop.next_gap(0.05, 1, 1.0)  # the first sample: FIRST_GAP
    gap = loop.next_gap(0.001, 1000, 2.0)
    assert gap == math.ceil(MIN_INTERVAL_S / ((2.0 - loop.probe_seconds) / 1000))
    assert loop.capped
    assert Cadence(0.03, every=3).gap_after(0.001, 0.002, train=1.0) == 3  # fixed: no floor


def test_the_share_is_said_once_a_second_of_training_backs_it():
    # A later fit of a model starts without Keras's trace: its first sample (30 ms of
    # set-up and summaries) came after 40 ms of steps, and the dock read "overhead 43%".
    cadence = Cadence(0.03)
    cadence.charge(0.030)
    assert math.isnan(cadence.overhead(0.070))
    assert math.isnan(cadence.overhead(OVERHEAD_BASIS_S - 0.001 + 0.030))
    assert math.isclose(cadence.overhead(2.030), 0.015)


def test_credit_is_what_the_budget_still_allows():
    cadence = Cadence(0.03)
    cadence.charge(0.05)
    assert math.isclose(cadence.credit(10.0), 0.25)
    assert cadence.credit(1.0) < 0
    assert Cadence(0.03, every=5).credit(0.0) == math.inf  # a fixed cadence has no budget


def test_fixed_cadence_ignores_costs():
    cadence = Cadence(0.03, every=7)
    cadence.charge(5.0)
    assert cadence.gap_after(1.0, 0.001, train=0.1) == 7


def test_a_due_sample_waits_while_earlier_ones_are_unpaid():
    cadence = Cadence(0.03)
    cadence.charge(0.09)  # the set-up
    cadence.gap_after(0.03, None, train=1.0)  # the first sample, on the provisional gap
    # 10 steps of 1 ms later: 0.12 s spent (+0.03 expected) needs 5 s of training.
    wait = cadence.wait_steps(0.001, train=1.01)
    assert wait == math.ceil(((0.12 + 0.03) / 0.03 - 1.01) / 0.001)
    assert cadence.wait_steps(0.001, train=6.0) == 0  # paid: sample now
    assert Cadence(0.03, every=3).wait_steps(0.001, 0.0) == 0
