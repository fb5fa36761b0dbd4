"""Console panel: output in order, colour by stream, one insert per frame, \\r handled."""

from __future__ import annotations

from PySide6.QtGui import QTextCursor

from tfstudio.ui.panels.console import STREAM_COLOURS, ConsoleBuffer, ConsolePanel


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
