"""Consumers (the window's bridge, a run's model, its store) take steps a block at a time."""

from __future__ import annotations

import numpy as np

from tfstudio.core.events import (
    EpochEnded,
    FitStarted,
    ModelSummary,
    StepColumns,
    StepEnded,
    step_batches,
)


def step(g: int) -> StepEnded:
    return StepEnded(0, g, 0, g, 1, {"loss": 1.0 / g}, {"loss": 1.0 / g}, g * 0.01)


def columns(first: int, n: int) -> StepColumns:
    g = np.arange(first, first + n, dtype=np.int64)
    return StepColumns(0, g, g * 0, g, g * 0 + 1, g * 0.01, {"loss": 1.0 / g}, {"loss": 1.0 / g})


def test_consecutive_steps_come_as_one_list_and_columns_and_other_events_in_order():
    fit = FitStarted(0, ModelSummary("m", "Sequential", (), 1, 1), 1, 0, None, 1, 0, 0.0)
    epoch = EpochEnded(0, 0, 4, {"loss": 0.5}, 0.1)
    s1, s2, s3, s4 = step(1), step(2), step(3), step(4)
    block = columns(5, 3)
    got = list(step_batches([fit, s1, s2, block, s3, epoch, s4]))
    assert got == [fit, [s1, s2], block, [s3], epoch, [s4]]
    assert got[2] is block  # a block is handed on whole
    assert list(step_batches([])) == []
    assert list(step_batches([s1, s2])) == [[s1, s2]]
