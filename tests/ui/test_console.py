"""Console panel: output in order, colour by stream, one insert per frame, \\r handled."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from tfstudio.core.events import ConsoleOutput
from tfstudio.ui.panels.console import FOLD_COLOUR, STREAM_COLOURS, ConsoleBuffer, ConsolePanel


def colour_at(panel, needle):
    """Foreground colour and italic flag of the first character of ``needle``."""
    doc = panel.view.document()
    pos = panel.text().index(needle)
    cursor = QTextCursor(doc)
    cursor.setPosition(pos + 1)  # the format of the character before the cursor
    fmt = cursor.charFormat()
    return fmt.foreground().color().name(), fmt.fontItalic()


def test_chunks_appear_in_order_and_coloured_by_stream(window, run):
    run.started("/tmp/train.py")
    run.console("stdout", "epoch 1 start\n")
    run.console("stderr", "W tensorflow warning\n")
    run.console("stdout", "epoch 1 done\n")
    run.frame()
    console = window.console
    text = console.text()
    order = ["Run started: /tmp/train.py", "epoch 1 start", "W tensorflow", "epoch 1 done"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    assert colour_at(console, "epoch 1 start") == (STREAM_COLOURS["stdout"], False)
    assert colour_at(console, "W tensorflow") == (STREAM_COLOURS["stderr"], False)
    assert colour_at(console, "Run started") == (STREAM_COLOURS["tfstudio"], True)
    assert STREAM_COLOURS["stderr"] != STREAM_COLOURS["stdout"]


def test_partial_chunks_join_into_lines(window, run):
    run.console("stdout", "hel").console("stdout", "lo wor").console("stdout", "ld\nnext")
    run.frame()
    assert window.console.text() == "hello world\nnext"


def test_one_document_insert_per_frame(window, run):
    before = window.console.inserts
    for i in range(500):
        run.console("stdout" if i % 2 else "stderr", f"line {i}\n")
    run.frame()
    assert window.console.inserts == before + 1
    assert window.console.text().count("\n") == 500


def test_carriage_return_progress_line_is_replaced_not_appended(window, run):
    run.console("stdout", "Epoch 1/2\n")
    for i in range(1, 101):
        run.console("stdout", f"\r{i}/100 [{'=' * (i // 10)}]")
    run.frame()
    run.console("stdout", "\r100/100 done\n").console("stdout", "Epoch 2/2\n")
    run.frame()
    assert window.console.text() == "Epoch 1/2\n100/100 done\nEpoch 2/2\n"


def test_carriage_return_across_frames_rewrites_the_line_on_screen(window, run):
    run.console("stdout", "start\n10%").frame()
    run.console("stdout", "\r20%").frame()
    run.console("stdout", "\r30%\r\n").frame()
    assert window.console.text() == "start\n30%\n"


def test_buffer_resolves_cr_without_touching_earlier_lines():
    buf = ConsoleBuffer()
    buf.add("stdout", "keep\nabc\rxy")
    clear_tail, segments = buf.take()
    assert not clear_tail
    assert segments == [["stdout", "keep\nxy"]]


def test_tfstudio_note_starts_on_its_own_line(window, run):
    run.console("stdout", "no newline yet").frame()
    window.console.note("a note")
    assert window.console.text() == "no newline yet\na note\n"


def test_autoscroll_only_when_already_at_the_bottom(window, run):
    console = window.console
    bar = console.view.verticalScrollBar()
    run.console("stdout", "".join(f"line {i}\n" for i in range(300))).frame()
    assert bar.maximum() > 0 and bar.value() == bar.maximum()
    bar.setValue(0)  # the user scrolled up to read
    run.console("stdout", "".join(f"more {i}\n" for i in range(50))).frame()
    assert bar.value() == 0
    bar.setValue(bar.maximum())
    run.console("stdout", "".join(f"again {i}\n" for i in range(50))).frame()
    assert bar.value() == bar.maximum()


def test_clear_action_empties_the_console(window, run):
    run.console("stdout", "something\n").frame()
    window.console.clear_action.trigger()
    assert window.console.text() == ""


def test_line_count_is_bounded(qtbot):
    panel = ConsolePanel(max_lines=100)
    qtbot.addWidget(panel)
    from tfstudio.core.events import ConsoleOutput

    for i in range(1000):
        panel.ingest_event(ConsoleOutput("stdout", f"line {i}\n"))
    panel.refresh()
    assert panel.view.document().blockCount() <= 101
    assert "line 999" in panel.text() and "line 0\n" not in panel.text()


def test_failed_run_traceback_is_shown_once(window, run, script_error):
    err = script_error("/proj/train.py", 7)
    run.started().console("stderr", err.traceback).ended("failed", 1, error=err).frame()
    text = window.console.text()
    assert text.count("Traceback (most recent call last)") == 1
    assert "ZeroDivisionError: division by zero at /proj/train.py:7" in text


# What TensorFlow 2.21 wrote on this machine (CPU only) at import and at its first op.
TF_STARTUP = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
    "I0000 00:00:1795485259.405270    3261 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.\n",
    "I0000 00:00:1795485259.543421    3261 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.\n"
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow "
    "with the appropriate compiler flags.\n",
]
CUINIT = (
    "E0000 00:00:1795485264.953825    3261 cuda_platform.cc:52] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
)


def _click_line(panel, needle):
    from PySide6.QtCore import QPoint
    from PySide6.QtTest import QTest

    view = panel.view
    block = view.document().findBlock(panel.text().index(needle))
    rect = view.blockBoundingGeometry(block).translated(view.contentOffset())
    point = QPoint(int(rect.left()) + 30, int(rect.center().y()))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)


def test_tensorflow_start_up_lines_fold_into_one_quiet_line_that_expands(window, run, tmp_path):
    from tfstudio.core.events import FitStarted, ModelSummary

    console = window.console
    for chunk in TF_STARTUP:  # a warm worker's import: before the run starts
        run.emit(ConsoleOutput("stderr", chunk, native=True))
    run.started("/tmp/train.py")
    run.emit(ConsoleOutput("stdout", "loading data\n"))  # the script's own line
    run.emit(ConsoleOutput("stderr", CUINIT[:40], native=True))  # split across chunks
    run.emit(ConsoleOutput("stderr", CUINIT[40:], native=True))
    run.emit(ConsoleOutput("stderr", "W0000 00:00:1.0  1 my_op.cc:12] the script's own op\n", True))
    run.frame()
    text = console.text()
    lines = text.splitlines()
    assert lines[0] == "Run started: /tmp/train.py"
    assert lines[1] == "▸ TensorFlow start-up: 5 messages, no GPU found (click to show)"
    assert "loading data" in text and "the script's own op" in text  # never hidden
    for hidden in (
        "cudart_stub",
        "absl::InitializeLog",
        "cpu_feature_guard",
        "To enable",
        "cuInit",
    ):
        assert hidden not in text
    assert colour_at(console, "TensorFlow start-up") == (FOLD_COLOUR, True)
    console.grab().save(str(tmp_path / "folded.png"))

    _click_line(console, "TensorFlow start-up")
    text = console.text()
    assert "▾ TensorFlow start-up: 5 messages, no GPU found (click to hide)" in text
    assert (
        "cudart_stub.cc:31] Could not find cuda drivers" in text and "UNKNOWN ERROR (303)" in text
    )
    assert text.index("cudart_stub") < text.index("loading data")  # under the fold's line
    console.grab().save(str(tmp_path / "expanded.png"))
    _click_line(console, "TensorFlow start-up")
    assert "cudart_stub" not in console.text() and "(click to show)" in console.text()

    # once training starts nothing more is folded, whatever it looks like
    model = ModelSummary("m", "Sequential", (), 1, 1)
    run.emit(FitStarted(0, model, 1, 0, 1, 1, 0, 0.0))
    run.emit(ConsoleOutput("stderr", TF_STARTUP[1], native=True)).frame()
    assert "cudart_stub" in console.text()


def test_only_native_stderr_before_training_is_folded(window, run):
    run.started()
    run.emit(ConsoleOutput("stderr", TF_STARTUP[0]))  # written by Python code: not native
    run.emit(ConsoleOutput("stdout", TF_STARTUP[1], native=True))  # fd 1, not TF's log
    run.frame()
    text = window.console.text()
    assert "absl::InitializeLog" in text and "cudart_stub" in text
    assert "TensorFlow start-up" not in text


def test_each_run_gets_its_own_fold(window, run):
    run.started().emit(ConsoleOutput("stderr", TF_STARTUP[1], native=True))
    run.ended("finished", 0, fits=0)
    run.emit(ConsoleOutput("stderr", TF_STARTUP[1], native=True))  # the next worker's import
    run.started().emit(ConsoleOutput("stderr", CUINIT, native=True)).frame()
    text = window.console.text()
    assert text.count("TensorFlow start-up: 1 message, no GPU found") == 1
    assert text.count("TensorFlow start-up: 2 messages, no GPU found") == 1
    assert len(window.console.startup_folds()) == 2
