"""The run clock: each step's time since the run started, for the time x axes."""

from __future__ import annotations

import numpy as np
import pytest

from tfstudio.core.events import FitStarted, ModelSummary, RunStarted, StepColumns
from tfstudio.core.run_clock import RunClock
from tfstudio.core.run_store import RunStore
from tfstudio.core.x_axes import EPOCH, GLOBAL, RELATIVE, WALL, axis_of, x_map


def test_every_step_at_its_time_and_back() -> None:
    clock = RunClock()
    clock.add([1, 2, 3], [0.5, 1.0, 1.5])
    clock.add([3, 4], [9.0, 2.0])  # step 3 again (another metric): ignored
    assert clock.seconds([1, 2, 3, 4]).tolist() == [0.5, 1.0, 1.5, 2.0]
    assert clock.steps_at([1.25]).tolist() == [2.5]
    clock.truncate(3)  # restored to step 2
    clock.add([3], [7.0])
    assert clock.seconds([3]).tolist() == [7.0]


def test_lines_in_any_order_fill_one_clock() -> None:
    """A folder's lines come one after another: a sparse line (system samples, each at
    the step training had reached) first, then the per-step loss: every step is placed."""
    clock = RunClock()
    clock.add([0, 0, 3, 7], [0.0, 0.0, 3.05, 7.05])
    clock.add(np.arange(1, 9), np.arange(1, 9) * 1.0)
    assert clock.seconds(np.arange(1, 9)).tolist() == [1.0, 2.0, 3.05, 4.0, 5.0, 6.0, 7.05, 8.0]


def test_bounded_and_the_newest_step_exact() -> None:
    clock = RunClock(capacity=8)
    steps = np.arange(1, 1001, dtype=float)
    for a in range(0, 1000, 7):
        clock.add(steps[a : a + 7], steps[a : a + 7] * 0.01)
    assert len(clock) <= 9
    assert clock.seconds([1000.0]).tolist() == [10.0]
    assert clock.seconds([500.0])[0] == pytest.approx(5.0)


def test_wall_times_of_a_recorded_run() -> None:
    clock = RunClock()
    clock.set_start(1000.0)
    clock.add_wall([1, 2], [1001.0, 1003.0])
    assert clock.seconds([1, 2]).tolist() == [1.0, 3.0]


def _block(fit: int, steps: list[int], times: list[float]) -> StepColumns:
    n = len(steps)
    ints = np.asarray(steps, dtype=np.int64)
    return StepColumns(
        fit,
        ints,
        np.zeros(n, np.int64),
        ints,
        np.ones(n, np.int64),
        np.asarray(times, dtype=np.float64),
        {"loss": np.ones(n)},
        {},
    )


def test_store_places_steps_on_every_axis() -> None:
    store = RunStore()
    store.add([RunStarted("s.py", ("s.py",), "/", 1_700_000_000.0)])
    model = ModelSummary("m", "Sequential", (), 1, 1)
    store.add([FitStarted(0, model, 2, 0, 4, 1, 0, 0.25)])
    store.add([_block(0, [1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0])])
    steps = np.asarray([0.0, 2.0, 4.0])
    assert x_map(store, GLOBAL) is None
    assert x_map(store, RELATIVE).to_x(steps).tolist() == [0.25, 2.0, 4.0]
    assert x_map(store, WALL).to_x(steps).tolist() == [
        1_700_000_000.25,
        1_700_000_002.0,
        1_700_000_004.0,
    ]
    # no epoch ended yet: 4 steps an epoch (from fit)
    assert x_map(store, EPOCH).to_x(steps).tolist() == [0.0, 0.5, 1.0]
    assert x_map(store, RELATIVE).to_step(3.0) == 3.0


def test_axis_names() -> None:
    assert axis_of("step") == GLOBAL and axis_of("wall") == WALL
    with pytest.raises(ValueError, match="x axis must be one of step, fit-step"):
        axis_of("minutes")
