"""After a checkpoint restore every view of the window tells one story (issue 52).

The rule (docs/controls.md): the run's step goes back to the checkpoint's step and
counts on from there; Keras's epoch loop is not rewound, so the epoch and the step
within it go on where they were, the fit ends after the batches it had left, its
epoch lines fall where its epochs really end, and progress and ETA count what is left.

The events are the ones a real fit sends (tests/e2e/test_restore_window.py drives the
same story through a real worker); here they are put on the channel by hand so each
view can be checked at each moment.
"""

from __future__ import annotations

from tfstudio.core.events import CheckpointRestored, RunState

SPE = 10  # steps per epoch
EPOCHS = 4


def _lines(window) -> list[float]:
    plot = window.metrics.plots["loss"]
    return [float(x) for x in plot.epoch_lines.positions()]


def _xs_after(window, step: float) -> list[float]:
    xs = window.metrics.store.steps["loss"].series.view()[0]
    return [float(x) for x in xs if x > step]


def test_status_bar_epoch_lines_fit_end_and_next_point_agree_after_a_restore(window, run):
    run.started().fit(epochs=EPOCHS, steps_per_epoch=SPE)
    run.steps(SPE, epoch=0).epoch_end(0, loss=0.5)  # steps 1..10
    run.steps(SPE, epoch=1).epoch_end(1, loss=0.4)  # steps 11..20
    run.steps(5, epoch=2)  # steps 21..25: epoch 3, batch 5
    run.emit(RunState("paused", 25)).frame()
    assert _lines(window) == [10.0, 20.0]
    assert window.metrics.xgroup.planned == EPOCHS * SPE  # 40: where the fit was to end

    # Restore step 12 (epoch 2 batch 2 when it was saved); Keras is at epoch 3 batch 5.
    run.emit(CheckpointRestored("/ck/ckpt-12", 12, 12, run.time)).frame()
    status = window.status
    assert status.epoch_label.text() == "epoch 3/4"  # Keras's loop: not rewound
    assert status.step_label.text() == "step 5/10 · run step 12"
    assert status.rate_label.text() == "paused at step 12"
    assert status.progress_bar.format() == "62%"  # 25 of the fit's 40 batches run
    tip = status.step_label.toolTip()
    assert "went back to 12" in tip and "ends at run step 27" in tip, tip
    assert status.progress_bar.toolTip() == tip
    assert window.metrics.store.epoch_steps == [10.0]  # the epoch that ended at 20 is gone
    assert window.metrics.xgroup.planned == 27.0  # 12 + the 15 batches Keras has left
    assert "Restored step 12 from ckpt-12" in window.checkpoints.message.text()

    # Resume: in one frame the epoch ends again (at 17), bringing the count of epoch
    # boundaries back to two; the line at 20 must not stay.
    run.global_step = 12
    run.emit(RunState("running", 12))
    run.steps(5, epoch=2, start=5).epoch_end(2, loss=0.45).frame()  # steps 13..17
    assert _lines(window) == [10.0, 17.0]
    assert _xs_after(window, 12.0)[0] == 13.0  # the next point is the step after the restore
    assert status.epoch_label.text() == "epoch 3/4"
    assert status.step_label.text() == "step 10/10 · run step 17"

    run.steps(SPE, epoch=3).epoch_end(3, loss=0.3)  # steps 18..27: the fit's last epoch
    run.fit_end().ended().frame()
    assert _lines(window) == [10.0, 17.0, 27.0]
    assert _xs_after(window, 12.0) == [float(s) for s in range(13, 28)]
    assert status.epoch_label.text() == "epoch 4/4"
    assert status.step_label.text() == "step 10/10 · run step 27"
    assert status.progress_bar.format() == "100%"
    assert window.status.tracker.progress.fit_end_step() == 27  # where the bar said it ends


def test_a_new_fit_after_a_restore_counts_without_the_note(window, run):
    run.started().fit(epochs=2, steps_per_epoch=SPE)
    run.steps(SPE, epoch=0).epoch_end(0, loss=0.5)
    run.emit(RunState("paused", 10), CheckpointRestored("/ck/ckpt-5", 5, 5, run.time)).frame()
    assert window.status.step_label.text() == "step 10/10 · run step 5"
    run.global_step = 5
    run.steps(SPE, epoch=1).epoch_end(1, loss=0.4).fit_end()  # ends at 15, not 20
    run.fit(epochs=1, steps_per_epoch=SPE).steps(3, epoch=0).frame()
    assert window.status.step_label.text() == "step 3/10"  # a fit of its own: no note
    assert window.status.step_label.toolTip() == ""
    assert window.metrics.xgroup.planned == 25.0  # this fit began at 15: 15 + 10


def test_epoch_lines_follow_a_restore_made_while_the_metrics_were_out_of_sight(window, run):
    """The plots skip their redraws behind another tab; when they are shown again after a
    restore and as many epoch ends as it dropped, the lines are where epochs ended now."""
    run.started().fit(epochs=EPOCHS, steps_per_epoch=SPE)
    run.steps(SPE, epoch=0).epoch_end(0, loss=0.5)
    run.steps(SPE, epoch=1).epoch_end(1, loss=0.4)
    run.steps(5, epoch=2).emit(RunState("paused", 25)).frame()
    assert _lines(window) == [10.0, 20.0]
    window.show_view("weights")  # the Metrics tab goes behind
    run.emit(CheckpointRestored("/ck/ckpt-12", 12, 12, run.time), RunState("running", 12))
    run.global_step = 12
    run.steps(5, epoch=2, start=5).epoch_end(2, loss=0.45).frame()  # ends at 17
    window.show_view("metrics")
    window.metrics.refresh()
    assert _lines(window) == [10.0, 17.0]
