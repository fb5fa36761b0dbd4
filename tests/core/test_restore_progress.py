"""Progress after a checkpoint restore: the run's step goes back, Keras's epoch loop goes on.

The issue's example (docs/controls.md): 20 epochs of 150 steps, paused at step 1,582
(epoch 11, batch 82), ``ckpt-751`` restored.
"""

from __future__ import annotations

import pytest

from tfstudio.core.events import (
    CheckpointRestored,
    FitStarted,
    ModelSummary,
    RunState,
    StepEnded,
)
from tfstudio.core.progress import ProgressTracker
from tfstudio.headless import describe

MODEL = ModelSummary("mlp", "Sequential", (), 1, 1)


def _step(global_step: int, epoch: int, batch: int, t: float) -> StepEnded:
    return StepEnded(0, global_step, epoch, batch, 1, {"loss": 0.5}, {"loss": 0.5}, t)


@pytest.fixture
def restored() -> ProgressTracker:
    tracker = ProgressTracker()
    tracker.feed(FitStarted(0, MODEL, 20, 0, 150, 1, 0, 0.0))
    tracker.feed(_step(1582, 10, 82, 10.0))
    tracker.feed(RunState("paused", 1582))
    tracker.feed(CheckpointRestored("/ck/ckpt-751", 751, 751, 11.0))
    return tracker


def test_the_issues_example_counts_as_docs_controls_says(restored):
    p = restored.progress
    assert (p.global_step, p.epoch, p.step) == (751, 11, 82)
    assert p.steps_left() == 68 + 9 * 150
    assert p.fit_end_step() == 2169
    assert p.fraction() == pytest.approx(1582 / 3000)
    assert p.restore_note() == "run step 751"
    assert "ends at run step 2,169" in p.restore_explanation()
    line = describe(restored)
    assert "epoch 11/20 | step 82/150 · run step 751" in line
    assert "paused at step 751" in line and "53%" in line


def test_eta_counts_the_batches_left_and_stop_says_keras_epoch(restored):
    # resumed: 100 steps a second from run step 752 on
    t = 12.0
    for i in range(1, 969 + 1):  # to run step 1,720 (the issue's Stop)
        g = 751 + i
        batch = 82 + i if i <= 68 else (i - 68 - 1) % 150 + 1
        epoch = 10 if i <= 68 else 11 + (i - 68 - 1) // 150
        restored.feed(_step(g, epoch, batch, t + i / 100))
    p = restored.progress
    assert (p.global_step, p.epoch, p.step) == (1720, 18, 1)
    assert p.fit_end_step() == 2169  # unchanged by the steps run since
    assert p.eta == pytest.approx((2169 - 1720) / 100, rel=0.02)
    assert p.restore_note() == "run step 1,720"


def test_a_new_fit_forgets_the_restore(restored):
    restored.feed(FitStarted(1, MODEL, 2, 0, 10, 1, 2169, 30.0))
    p = restored.progress
    assert p.restored_step is None and p.restore_note() == "" and p.restore_explanation() == ""
    assert p.fit_end_step() == 2169 + 20


def test_a_custom_loops_step_goes_back_with_the_run_step():
    """A loop counts its steps from the run's (what the next step reports): a restore takes
    both back, so paused after it the status says step 4,096, not the old 18,466."""
    tracker = ProgressTracker()
    loop = FitStarted(0, MODEL, 0, 0, None, 1, 0, 0.0, kind="loop")
    tracker.feed(loop)
    tracker.feed(StepEnded(0, 18466, 0, 18466, 1, {"loss": 0.5}, {}, 10.0))
    tracker.feed(RunState("paused", 18466))
    tracker.feed(CheckpointRestored("/ck/ckpt-4096", 4096, 4096, 11.0))
    p = tracker.progress
    assert (p.global_step, p.step) == (4096, 4096)
    assert p.restore_note() == ""  # one count: the loop's step is the run's
    assert "step 4096" in describe(tracker) and "18466" not in describe(tracker)
    tracker.feed(StepEnded(0, 4097, 0, 4097, 1, {"loss": 0.5}, {}, 12.0))
    assert (p.global_step, p.step) == (4097, 4097)
