"""Main window: open / run / stop, recent scripts, drag and drop, run_finished."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QDockWidget

from tfstudio.core.events import LearningRate, RunEnded
from tfstudio.core.run_store import LR_KEY
from tfstudio.ui.main_window import MAX_RECENT, MainWindow


def test_title_and_default_size(window, script):
    assert window.windowTitle() == "tfstudio"
    assert window.width() >= 1000 and window.height() >= 700
    assert window.open_script(str(script))
    assert window.script_path == str(script.resolve())
    assert window.windowTitle().startswith("train.py")
    # without a window manager's title bar the user still sees what is open
    assert "train.py is open" in window.metrics.placeholder()


def test_open_missing_file_says_why_and_starts_nothing(window, launcher, tmp_path):
    missing = tmp_path / "nope.py"
    assert window.open_script(str(missing)) is False
    assert window.script_path is None
    assert launcher.calls == []
    assert f"No such file: {missing}" in window.console.text()
    assert "No such file" in window.statusBar().currentMessage()
    assert not window.run_action.isEnabled()


def test_open_non_python_file_is_refused(window, launcher, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hi")
    assert window.open_script(str(notes)) is False
    assert "expected a .py file" in window.console.text()
    assert launcher.calls == []


def test_open_binary_py_is_refused(window, launcher, tmp_path):
    blob = tmp_path / "blob.py"
    blob.write_bytes(b"\x00\x01\x02binary")
    assert window.open_script(str(blob)) is False
    assert "binary data" in window.console.text()
    assert window.script_path is None and launcher.calls == []


def test_open_folder_is_refused(window, tmp_path):
    assert window.open_script(str(tmp_path)) is False
    assert "is a folder" in window.console.text()


def test_run_and_stop_enabling(window, launcher, run, script):
    assert not window.run_action.isEnabled() and not window.stop_action.isEnabled()
    window.open_script(str(script))
    assert window.run_action.isEnabled() and not window.stop_action.isEnabled()

    assert window.run_script(["--epochs", "2"]) is True
    assert launcher.calls == [("start", str(script.resolve()), ("--epochs", "2"))]
    assert not window.run_action.isEnabled() and window.stop_action.isEnabled()
    assert not window.open_action.isEnabled()

    assert window.run_script() is False  # refuses while running
    assert len([c for c in launcher.calls if c[0] == "start"]) == 1

    window.stop_action.trigger()
    assert launcher.calls[-1] == ("stop",)
    assert window.status.state_text() == "stopping… — at the next batch boundary"
    assert window.stop_action.isEnabled()  # pressed again, it stops harder
    assert "interrupt" in window.stop_action.toolTip()
    window.stop_action.trigger()
    assert launcher.calls[-2:] == [("stop",), ("stop",)]
    run.engine("stopping", "no batch boundary was reached: interrupting the script (SIGINT)")
    run.frame()
    assert "SIGINT" in window.status.state_text()

    run.frame()  # the RunStarted the launcher queued
    run.ended("stopped", 0).frame()
    assert window.run_action.isEnabled() and not window.stop_action.isEnabled()
    assert window.open_action.isEnabled()


def test_run_without_script_is_refused(window, launcher):
    assert window.run_script() is False
    assert launcher.calls == []
    assert "No script is open" in window.console.text()


def test_run_refused_by_launcher_is_reported(window, launcher, script):
    window.open_script(str(script))
    launcher.refuse = RuntimeError("engine busy")
    assert window.run_script() is False
    assert "engine busy" in window.console.text()
    assert window.run_action.isEnabled()


def test_run_script_fails_cleanly_if_script_was_deleted(window, launcher, script):
    window.open_script(str(script))
    script.unlink()
    assert window.run_script() is False
    assert launcher.calls == []
    assert "No such file" in window.console.text()


def test_stop_run_calls_launcher(window, launcher, script):
    window.open_script(str(script))
    window.run_script()
    window.stop_run()
    assert ("stop",) in launcher.calls


def test_run_finished_signal_after_final_state_is_drawn(window, run, qtbot):
    seen = {}

    def on_finished(status, code):
        seen["args"] = (status, code)
        seen["state"] = window.status.state_text()
        seen["points"] = window.metrics.plots["loss"].steps["loss"].series.count

    window.run_finished.connect(on_finished)
    run.started().fit().steps(25)
    with qtbot.waitSignal(window.run_finished, timeout=2000) as blocker:
        run.ended("failed", 3, message="boom").frame()
    assert blocker.args == ["failed", 3]
    assert seen == {"args": ("failed", 3), "state": "failed — boom", "points": 25}


def test_run_finished_emitted_by_the_timer(window, run, qtbot):
    with qtbot.waitSignal(window.run_finished, timeout=3000) as blocker:
        run.started().ended("finished", 0, fits=0)  # no manual frame: the QTimer drains
    assert blocker.args == ["finished", 0]


def drop(window, *paths):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    enter = QDragEnterEvent(
        QPoint(50, 50),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dragEnterEvent(enter)
    event = QDropEvent(
        QPointF(50, 50),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(event)
    return enter.isAccepted()


def test_dropping_a_py_file_opens_it(window, script):
    assert window.acceptDrops()
    assert drop(window, script)
    assert window.script_path == str(script.resolve())


def test_dropping_a_txt_file_is_rejected_with_a_message(window, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    drop(window, notes)
    assert window.script_path is None
    assert "not a Python script" in window.console.text()
    assert "not a Python script" in window.statusBar().currentMessage()


def test_dropping_two_files_asks_for_one(window, script, tmp_path):
    other = tmp_path / "other.py"
    other.write_text("")
    drop(window, script, other)
    assert window.script_path is None
    assert "one Python script" in window.console.text()


def recent_labels(window):
    window.recent_menu.aboutToShow.emit()
    return [a.data() for a in window.recent_menu.actions() if a.data()]


def test_recent_menu_newest_first_pruned_and_capped(
    window, tmp_path, settings, channel, launcher, qtbot
):
    paths = []
    for i in range(MAX_RECENT + 2):
        p = tmp_path / f"s{i}.py"
        p.write_text("")
        paths.append(p)
        assert window.open_script(str(p))
    labels = recent_labels(window)
    assert len(labels) == MAX_RECENT
    assert labels[0] == str(paths[-1].resolve())
    assert str(paths[0].resolve()) not in labels

    paths[-2].unlink()  # missing files are pruned
    labels = recent_labels(window)
    assert str(paths[-2].resolve()) not in labels and len(labels) == MAX_RECENT - 1

    window.open_script(str(paths[-5]))  # re-opening moves it to the top, no duplicate
    labels = recent_labels(window)
    assert labels[0] == str(paths[-5].resolve()) and labels.count(labels[0]) == 1

    # persisted: a new window on the same settings sees the same list
    other = MainWindow(channel, launcher, settings)
    qtbot.addWidget(other)
    assert recent_labels(other) == labels
    other.bridge.stop()


def test_recent_entry_opens_the_script(window, script, tmp_path):
    other = tmp_path / "second.py"
    other.write_text("")
    window.open_script(str(script))
    window.open_script(str(other))
    window.recent_menu.aboutToShow.emit()
    action = next(a for a in window.recent_menu.actions() if a.data() == str(script.resolve()))
    action.trigger()
    assert window.script_path == str(script.resolve())


def test_close_stops_a_running_run(window, launcher, script):
    window.open_script(str(script))
    window.run_script()
    window.close()
    assert ("stop",) in launcher.calls


def test_run_button_passes_the_command_line_arguments_of_that_script(
    window, launcher, run, script, tmp_path
):
    assert window.open_script(str(script))
    window.script_args = ("--epochs", "3")
    window.run_action.trigger()
    assert launcher.calls[-1] == ("start", str(script.resolve()), ("--epochs", "3"))
    run.ended().frame()
    other = tmp_path / "other.py"
    other.write_text("print(1)\n")
    assert window.open_script(str(other))
    assert window.script_args == ()


def test_view_system_raises_and_enlarges_the_system_dock(window, tmp_path):
    """``tfstudio SCRIPT --view system``: parsed, then the System dock in front and wide."""
    from PySide6.QtWidgets import QApplication

    from tfstudio.cli import VIEWS as CLI_VIEWS
    from tfstudio.cli import gui_parser
    from tfstudio.ui.main_window import VIEWS

    assert set(CLI_VIEWS) == set(VIEWS)
    assert gui_parser().parse_args(["train.py", "--view", "system"]).view == "system"
    dock = window.findChild(QDockWidget, "systemDock")
    window.inspector.show_view("model")  # the model tree tab in front of the System dock
    QApplication.processEvents()
    assert window.system.visibleRegion().isEmpty()
    narrow = dock.width()
    window.show_view("system")
    QApplication.processEvents()
    assert not window.system.visibleRegion().isEmpty()
    assert dock.width() > narrow + 100
    window.grab().save(str(tmp_path / "view_system.png"))
    with pytest.raises(ValueError, match="expected one of"):
        window.show_view("nope")


def test_metrics_area_says_a_run_failed_and_why(window, launcher, run, tmp_path):
    """A script that crashes before its first metric: the empty area tells it, not 'press Run'."""
    segv = tmp_path / "segv.py"
    segv.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert window.open_script(str(segv))
    assert window.metrics.placeholder().startswith("segv.py is open")
    assert window.run_script()
    run.frame()
    assert "segv.py is running" in window.metrics.placeholder()
    run.ended("failed", -11, fits=0, message="the script's process died of SIGSEGV").frame()
    text = window.metrics.placeholder()
    assert text.startswith("segv.py failed") and "died of SIGSEGV" in text
    assert "is open" not in text
    window.grab().save(str(tmp_path / "failed_placeholder.png"))


def test_metrics_area_names_the_exception_of_a_failed_run(window, run, script, script_error):
    window.open_script(str(script))
    window.run_script()
    run.frame()
    run.ended("failed", 1, fits=0, error=script_error(str(script), 3)).frame()
    text = window.metrics.placeholder()
    assert "train.py failed" in text
    assert "ZeroDivisionError: division by zero" in text and f"{script}:3" in text


def test_a_run_that_failed_before_its_first_step_says_so_not_a_learning_rate_plot(
    window, run, script, script_error
):
    """The learning rate comes at the fit's start; a shape error at the first batch then
    left a plot of that one rate where the failure should be said."""
    window.open_script(str(script))
    window.run_script()
    run.started().fit().emit(LearningRate(0, 0.001, False)).frame()
    run.ended("failed", 1, error=script_error(str(script), 3)).frame()
    metrics = window.metrics
    assert metrics.plots == {} and not metrics._placeholder.isHidden()
    assert "train.py failed" in metrics.placeholder()
    # a run with steps keeps its plots when it fails, the learning rate's included
    window.run_script()
    run.started().fit().emit(LearningRate(0, 0.001, False)).steps(3).frame()
    run.ended("failed", 1, error=script_error(str(script), 3)).frame()
    assert {"loss", LR_KEY} <= set(metrics.plots) and metrics._placeholder.isHidden()


def test_inspector_toggle_in_the_run_menu_turns_the_probes_off_for_the_next_run(
    window, launcher, script
):
    run_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")
    assert window.inspect_action in run_menu.actions()
    assert window.inspect_action.isCheckable() and window.inspect_action.isChecked()
    window.open_script(str(script))
    window.inspect_action.trigger()  # off, as a click in the menu does
    assert window.run_script() is True
    assert launcher.options.inspector is False
    launcher.running = False
    window._on_run_ended(RunEnded("finished", 0, 0, 0, 0.0, None, ""))
    window.inspect_action.trigger()  # on again
    assert window.run_script() is True
    assert launcher.options.inspector is True
