"""The console: a dozen lines and more at first, and a failure's summary readable whole.

Issue 52: the console showed ~5 lines and cut long lines (the failure summary ran off
its right edge).
"""

from __future__ import annotations

from PySide6.QtGui import QTextLayout
from PySide6.QtWidgets import QApplication, QPlainTextEdit

from tfstudio.core.events import ScriptError


def long_error(path="/home/someone/projects/an-experiment/with/a/deep/folder/train_model.py"):
    message = "Input 0 of layer 'dense_1' is incompatible with the layer: " + "x" * 160
    tb = f'Traceback (most recent call last):\n  File "{path}", line 42\nValueError: {message}\n'
    return ScriptError("ValueError", message, path, 42, tb)


def lines_shown(console):
    view = console.view
    return view.viewport().height() / view.fontMetrics().lineSpacing()


def line_count(view, block):
    layout: QTextLayout = block.layout()
    return layout.lineCount()


def test_the_console_shows_a_dozen_lines_and_more(window, qtbot):
    qtbot.waitExposed(window)
    QApplication.processEvents()
    assert window.size().height() <= 820  # the window's own first size
    assert lines_shown(window.console) >= 12
    window.resize(1600, 1000)
    QApplication.processEvents()
    assert lines_shown(window.console) >= 12


def test_a_failure_summary_wraps_and_is_readable_whole(window, run, qtbot):
    qtbot.waitExposed(window)
    run.started().fit(steps_per_epoch=5).steps(5)
    run.ended(status="failed", exit_code=1, error=long_error()).frame()
    console = window.console
    view = console.view
    doc = view.document()
    summary = next(
        doc.findBlockByNumber(i)
        for i in range(doc.blockCount())
        if doc.findBlockByNumber(i).text().startswith("Run failed after")
    )
    text = summary.text()
    assert "train_model.py:42" in text and text.endswith("(exit code 1)")
    assert view.fontMetrics().horizontalAdvance(text) > view.viewport().width()  # a long line
    QApplication.processEvents()
    assert view.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
    assert line_count(view, summary) >= 2  # wrapped onto lines of the console's width
    assert view.horizontalScrollBar().maximum() == 0  # nothing hides to the right
    # turned off (context menu): the long line is reached by scrolling sideways
    console.wrap_action.setChecked(False)
    QApplication.processEvents()
    assert view.lineWrapMode() == QPlainTextEdit.LineWrapMode.NoWrap
    assert view.horizontalScrollBar().maximum() > 0


def test_a_closed_or_floating_console_is_left_alone(window, qtbot, capfd):
    qtbot.waitExposed(window)
    dock = window._console_dock
    dock.setFloating(True)
    dock.resize(500, 100)
    window.resize(1300, 900)
    QApplication.processEvents()
    assert dock.isFloating() and dock.height() < 150  # a window of its own keeps its size
    dock.setFloating(False)
    dock.close()
    window.resize(1250, 880)
    QApplication.processEvents()
    assert dock.isHidden()
    assert "resizeDocks" not in capfd.readouterr().err
