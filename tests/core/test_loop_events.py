"""Loop segments in the shared progress and summary texts (no TensorFlow)."""

from __future__ import annotations

from tfstudio.core.events import FitEnded, FitStarted, ModelSummary, RunEnded, StepEnded
from tfstudio.core.progress import ProgressTracker
from tfstudio.headless import describe


def _loop_started() -> FitStarted:
    summary = ModelSummary("discriminator + generator", "custom loop", (), 39, 39)
    return FitStarted(0, summary, 0, 0, None, 1, 0, 0.0, kind="loop", loop_index=1)


def test_loop_segment_title_and_progress_without_epochs() -> None:
    started = _loop_started()
    assert started.title() == "loop 1: discriminator + generator"
    tracker = ProgressTracker()
    tracker.feed(started)
    values = {"loss (discriminator)": 1.5, "loss (generator)": 0.7}
    tracker.feed(StepEnded(0, 1, 0, 1, 1, values, {}, 0.5))
    p = tracker.progress
    assert p.loss_key == "loss (discriminator)" and p.loss == 1.5
    assert p.epochs == 0 and p.eta is None and p.fraction() is None
    # a metric's running value in the same step does not take the loss's place
    tracker.feed(StepEnded(0, 2, 0, 2, 1, values, {"train_accuracy": 0.5}, 0.6))
    assert tracker.progress.loss_key == "loss (discriminator)"
    assert "ETA" not in describe(tracker)  # a loop's length is not known
    tracker.feed(FitEnded(0, 2, False, 0.7))
    assert tracker.progress.eta is None  # not "ETA 0:00" at its end either


def test_run_summary_counts_loops_and_keeps_steps() -> None:
    ended = RunEnded("finished", 0, 0, 300, 12.0, loops=1)
    assert "0 fits, 1 loop, 300 steps (exit code 0)" in ended.summary()
    assert "loop" not in RunEnded("finished", 0, 2, 10, 1.0).summary()
