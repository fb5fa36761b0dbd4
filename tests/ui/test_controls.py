"""Run controls in a real window, driven by synthetic events: pause, checkpoints, mode, LR, NaN."""

from __future__ import annotations

import math

from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication

from tfstudio.core.commands import (
    DeleteCheckpoint,
    Pause,
    RestoreCheckpoint,
    Resume,
    SaveCheckpoint,
    SetExecutionMode,
    SetLearningRate,
)
from tfstudio.core.events import (
    CheckpointDeleted,
    CheckpointList,
    CheckpointRefused,
    CheckpointRestored,
    CheckpointSaved,
    ConsoleOutput,
    ExecutionMode,
    FitStarted,
    LearningRate,
    ModelSummary,
    NonFinite,
    Notice,
    RunState,
)
from tfstudio.core.options import RunOptions


def sent(launcher) -> list:
    return [c[1] for c in launcher.calls if c[0] == "send"]


def saved(path, step, loss=0.5, automatic=False):
    return CheckpointSaved(path, step, step * 0.01, loss, 1_700_000_000.0 + step, 0.01, automatic)


def test_pause_resume_and_save_are_commands_and_the_state_is_shown(window, run, launcher):
    control = window.control
    assert not control.pause_action.isEnabled()
    assert control.pause_action.shortcut().toString() == "F6"
    assert control.save_action.shortcut().toString() == "Ctrl+S"
    run.started().fit().steps(5).frame()
    assert control.pause_action.isEnabled() and control.save_action.isEnabled()
    control.pause_action.trigger()
    assert sent(launcher) == [Pause()]
    run.emit(RunState("paused", 5)).frame()
    assert window.state() == "paused"
    assert "paused" in window.status.state_text()
    assert control.pause_action.text() == "Resume"
    control.pause_action.trigger()
    control.save_action.trigger()
    assert sent(launcher)[1:] == [Resume(), SaveCheckpoint()]
    run.emit(RunState("running", 5)).frame()
    assert window.state() == "running" and control.pause_action.text() == "Pause"
    run.ended("finished").frame()
    assert not control.pause_action.isEnabled()


def test_checkpoints_panel_lists_restores_while_paused_and_deletes_with_confirmation(
    window, run, launcher
):
    panel = window.checkpoints
    answers = []
    panel.confirm = lambda title, text: answers.pop(0)
    run.started().fit().steps(20).frame()
    run.emit(saved("/ck/ckpt-10", 10, loss=0.25, automatic=True), saved("/ck/ckpt-20", 20)).frame()
    assert panel.paths() == ["/ck/ckpt-10", "/ck/ckpt-20"]
    assert panel.table.item(0, 0).text() == "10" and panel.table.item(0, 3).text() == "0.25"
    assert panel.table.item(0, 4).text() == "automatic"
    assert panel.table.rowHeight(0) <= panel.table.fontMetrics().height() + 8  # compact rows
    # a checkpoint TensorFlow completed but tfstudio never noted (the worker was killed
    # between the two): listed from TensorFlow's files, its run time and loss unknown
    unnoted = CheckpointSaved("/ck/ckpt-30", 30, math.nan, math.nan, math.nan)
    run.emit(CheckpointList("/ck", (saved("/ck/ckpt-10", 10), unnoted))).frame()
    assert [panel.table.item(1, c).text() for c in range(4)] == ["30", "—", "—", "—"]
    run.emit(saved("/ck/ckpt-10", 10, loss=0.25, automatic=True), saved("/ck/ckpt-20", 20))
    run.emit(CheckpointDeleted("/ck/ckpt-30")).frame()
    panel.select("/ck/ckpt-10")
    assert not panel.restore_button.isEnabled()  # running, not paused
    panel.restore_selected()
    assert sent(launcher) == []
    run.emit(RunState("paused", 20)).frame()
    assert panel.restore_button.isEnabled()
    panel.restore_button.click()
    assert sent(launcher) == [RestoreCheckpoint("/ck/ckpt-10")]
    run.emit(CheckpointRestored("/ck/ckpt-10", 10, 10)).frame()
    assert "Restored step 10" in panel.message.text()
    assert "Keras's epoch loop is not rewound" in panel.message.text()
    assert panel.table.item(0, 4).text() == "automatic · restored"
    assert (10, "restored step 10") in window.metrics.marks()
    run.emit(
        CheckpointRefused("/other/ckpt-3", "restore", "kernel: checkpoint (5, 8), model (4, 8)")
    )
    run.frame()
    assert "(5, 8)" in panel.message.text() and "(5, 8)" in window.console.text()
    answers.extend([False, True])
    panel.select("/ck/ckpt-20")
    panel.delete_selected()  # "no"
    panel.delete_selected()  # "yes"
    assert sent(launcher)[1:] == [DeleteCheckpoint("/ck/ckpt-20")]


def test_eager_switch_sets_the_next_run_and_switches_a_live_one(window, run, launcher, script):
    control = window.control
    window.open_script(str(script))
    control.eager_action.trigger()  # before any run: for the next run
    assert control.options.eager is True and sent(launcher) == []
    assert control.mode_label.text() == "eager"
    assert window.run_script()
    run.frame()
    assert control.mode_label.text() == "eager"  # nothing traced yet: no "traced 0×"
    run.fit().emit(ExecutionMode(False, 1, 0)).steps(3).frame()
    assert control.mode_label.text() == "graph · traced 1×"
    assert not control.eager_action.isChecked()  # shows what the run does
    control.eager_action.trigger()
    assert sent(launcher) == [SetExecutionMode(True)]
    run.emit(ExecutionMode(True, 1, 3)).frame()
    assert control.mode_label.text() == "eager · traced 1×"
    control.eager_action.trigger()
    run.emit(ExecutionMode(False, 2, 9)).frame()
    assert sent(launcher)[-1] == SetExecutionMode(False)
    assert control.mode_label.text() == "graph · traced 2×"


def test_after_an_eager_loop_another_script_shows_the_next_runs_mode(window, run, script):
    control = window.control
    window.open_script(str(script))
    assert window.run_script()
    run.emit(ExecutionMode(True, 0, 0)).frame()  # an eager custom loop: it says so
    assert control.mode_label.text() == "eager" and control.eager_action.isChecked()
    run.ended().frame()
    other = script.parent / "other.py"
    other.write_text("print('hello')\n")
    window.open_script(str(other))
    control.refresh()
    # the next run's mode (graph), on the label and the toggle alike
    assert control.mode_label.text() == "graph" and not control.eager_action.isChecked()
    assert control.options.eager is not True


def test_learning_rate_field_and_schedule_confirmation(window, run, launcher):
    control = window.control
    answers = []
    control.confirm = lambda title, text: answers.pop(0)
    run.started().fit().emit(LearningRate(0, 0.01, False)).steps(3).frame()
    assert control.lr_label.text() == "0.01"
    control.lr_edit.setText("not a number")
    control.lr_button.click()
    assert sent(launcher) == []
    control.lr_edit.setText("0.003")
    control.lr_button.click()
    assert sent(launcher) == [SetLearningRate(0.003, replace_schedule=False)]
    run.emit(LearningRate(3, 0.1, True, "ExponentialDecay")).frame()
    assert control.lr_label.text() == "0.1 (ExponentialDecay)"
    answers.extend([False, True])
    assert not control.set_learning_rate(0.5)  # the user keeps the schedule
    assert control.set_learning_rate(0.5)
    assert sent(launcher)[1:] == [SetLearningRate(0.5, replace_schedule=True)]
    run.emit(LearningRate(10, 0.5, False)).frame()
    assert "learning_rate" in window.metrics.plots  # the LR as a line


def test_non_finite_loss_is_marked_on_the_plots_and_named(window, run, tmp_path):
    run.started().fit().steps(7).emit(saved("/ck/ckpt-3", 3), saved("/ck/ckpt-6", 6)).frame()
    bad = NonFinite(7, math.nan, "ratio", "sequential/out/kernel", "", "recomputed", "pause")
    run.emit(bad, RunState("paused", 7, "non-finite loss"))
    run.console("tfstudio", bad.describe() + "\n").frame()
    assert (7, "NaN/Inf loss at step 7") in window.metrics.marks()
    assert window.state() == "paused"
    assert "NaN at step 7 in ratio" in window.status.state_text()
    assert "First layer with a non-finite output: ratio" in window.console.text()
    # the last checkpoint before the NaN is selected, ready to restore
    assert window.checkpoints.selected() == "/ck/ckpt-6"
    assert window.checkpoints.restore_button.isEnabled()
    # every plot made later carries the marker too
    assert "NaN/Inf loss at step 7" in window.metrics.plots["loss"].mark_labels()
    assert window.grab().save(str(tmp_path / "controls-nan.png"))
    # stopped there, the x range fits the data: the mark sits at its end and its label
    # still reads whole, inside the plot (labels are placed as the window paints)
    run.ended("stopped", 130).frame()
    assert window.grab().save(str(tmp_path / "controls-nan-stopped.png"))
    plot = window.metrics.plots["loss"]
    ((_, line),) = plot.marks
    assert plot.vb.viewRange()[0][1] < 8
    inside = plot.vb.sceneBoundingRect()
    assert inside.contains(line.label.mapRectToScene(line.label.boundingRect()))


def test_console_shows_fd_level_output_apart_from_print(window, run):
    run.started()
    run.emit(ConsoleOutput("stdout", "python print\n"))
    run.emit(ConsoleOutput("stderr", "tf.print line\n", native=True)).frame()
    doc = window.console.view.document()

    def colour_of(text):
        cursor = doc.find(text)
        assert not cursor.isNull()
        cursor.setPosition(cursor.selectionStart() + 1, QTextCursor.MoveMode.MoveAnchor)
        fmt = cursor.charFormat()
        return fmt.foreground().color().name(), fmt.background().color().name()

    plain, native = colour_of("python print"), colour_of("tf.print line")
    assert plain != native
    assert native[1] != "#000000"  # a tinted background marks fd-level output


def test_retracing_warning_is_a_notice_in_the_status_bar(window, run):
    text = (
        "5 out of the last 5 calls to <function f at 0x7f> triggered tf.function retracing. "
        "Tracing is expensive and ..."
    )
    run.started().emit(Notice("retracing", text)).frame()
    shown = window.statusBar().currentMessage()
    assert shown.startswith("TensorFlow retracing: 5 out of the last 5 calls")
    assert "Tracing is expensive" not in shown
    assert "Notice (retracing)" in window.console.text()


def test_stop_at_step_and_checkpoint_every_are_settings_for_the_next_run(window, script, launcher):
    control = window.control
    answers = [17, None, 25]
    control.ask_int = lambda title, label, current: answers.pop(0)
    control.stop_at_action.trigger()
    control.stop_at_action.trigger()  # cancelled: unchanged
    control.checkpoint_every_action.trigger()
    assert control.options.stop_at_step == 17 and control.options.checkpoint_every == 25
    assert control.stop_at_action.text() == "Stop at step 17…"
    assert control.checkpoint_every_action.text() == "Checkpoint every 25 steps…"
    launched = []
    launcher.start = lambda s, args=(), options=None: launched.append(options)
    window.open_script(str(script))
    assert window.run_script()
    assert launched[0].stop_at_step == 17 and launched[0].checkpoint_every == 25


def test_command_line_options_reach_the_control_panel(window):
    window.control.set_run_options(RunOptions(eager=True, lr=0.02, stop_at_step=17))
    assert window.control.eager_action.isChecked()
    assert window.control.lr_label.text() == "next run: 0.02"
    assert window.control.options.stop_at_step == 17


def test_pause_and_resume_keep_the_toolbar_still(window, run):
    """The Pause button reads Resume while paused; Stop and what follows must not move."""
    toolbar = window.toolbar
    actions = (window.stop_action, window.control.save_action, window.control.eager_action)
    pause = toolbar.widgetForAction(window.control.pause_action)
    run.started().fit().steps(5).frame()

    def geometry():
        return [toolbar.widgetForAction(a).geometry() for a in actions] + [
            window.control.lr_widget.geometry()
        ]

    QApplication.processEvents()
    before, pause_before = geometry(), pause.geometry()
    run.emit(RunState("paused", 5)).frame()
    QApplication.processEvents()
    assert window.control.pause_action.text() == "Resume"
    assert geometry() == before
    assert pause.geometry() == pause_before
    assert pause.width() >= pause.sizeHint().width()  # "Resume" fits
    run.emit(RunState("running", 5)).frame()
    QApplication.processEvents()
    assert geometry() == before


def test_a_restore_that_replaces_a_typed_learning_rate_says_so_and_offers_it_again(
    window, run, launcher
):
    """Paused, the user sets 0.01; a Restore brings the checkpoint's 0.001 back."""
    control = window.control
    run.started().fit().emit(LearningRate(0, 0.001, False)).steps(20).frame()
    run.emit(RunState("paused", 20)).frame()
    control.lr_edit.setText("0.01")
    control.lr_button.click()
    assert sent(launcher) == [SetLearningRate(0.01, replace_schedule=False)]
    run.emit(LearningRate(20, 0.009999999776482582, False)).frame()  # float32, as TF sends it
    assert not control.reapply_button.isVisible()
    run.emit(CheckpointRestored("/tmp/ckpt/ckpt-1", 10, 10), LearningRate(10, 0.001, False))
    run.frame()
    console = window.console.text()
    assert "The restored checkpoint brought its own learning rate (0.001)" in console
    assert "the 0.01 you set was replaced" in console
    assert control.lr_label.text() == "0.001 (restored)"
    assert control.reapply_button.isVisible()
    assert control.reapply_button.text() == "Re-apply 0.01"
    control.reapply_button.click()
    assert sent(launcher)[-1] == SetLearningRate(0.01, replace_schedule=False)
    run.emit(LearningRate(10, 0.01, False)).frame()
    assert not control.reapply_button.isVisible()
    assert control.lr_label.text() == "0.01"


def test_a_restore_keeping_the_typed_rate_or_with_none_typed_says_nothing(window, run):
    control = window.control
    run.started().fit().emit(LearningRate(0, 0.001, False)).steps(5)
    run.emit(RunState("paused", 5), CheckpointRestored("/tmp/c/ckpt-1", 2, 2))
    run.emit(LearningRate(2, 0.001, False)).frame()
    assert "learning rate" not in window.console.text()
    assert not control.reapply_button.isVisible()
    control.set_learning_rate(0.001)
    run.emit(CheckpointRestored("/tmp/c/ckpt-1", 2, 2), LearningRate(2, 0.001, False)).frame()
    assert "learning rate" not in window.console.text()


def test_a_restore_in_a_custom_loop_speaks_of_the_loop_not_of_keras_epochs(window, run):
    panel = window.checkpoints
    run.started().emit(
        FitStarted(0, ModelSummary("mlp", "custom loop", (), 42, 42), 0, 0, None, 1, 0, 0.0,
                   kind="loop", loop_index=1),
    )  # fmt: skip
    run.steps(20).emit(saved("/ck/ckpt-10", 10), RunState("paused", 20)).frame()
    run.emit(CheckpointRestored("/ck/ckpt-10", 10, 10)).frame()
    text = panel.message.text()
    assert "your loop's own for is not rewound" in text and "Keras" not in text
