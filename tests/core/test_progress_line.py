"""The headless progress line shares the terminal with the script's own output."""

import io

from tfstudio.core.events import ConsoleOutput
from tfstudio.core.progress import ProgressTracker
from tfstudio.headless import ProgressLine, _show

KERAS_BAR = "\r\x1b[1m11/64\x1b[0m ━━━━ 0s 5ms/step - loss: 0.6434"


def _line(hold: float = 60.0) -> tuple[ProgressLine, io.StringIO]:
    term = io.StringIO()  # stdout and stderr on one terminal
    line = ProgressLine(term, interactive=True, hz=1e9, hold=hold)
    return line, term


def _console(line: ProgressLine, term: io.StringIO, stream: str, text: str) -> None:
    _show(ConsoleOutput(stream, text), ProgressTracker(), line, term, term)


def test_our_line_is_drawn_while_the_script_is_quiet():
    line, term = _line()
    _console(line, term, "stdout", "loading data\n")
    line.draw("epoch 1/2 | step 3/10")
    assert term.getvalue() == "loading data\n\repoch 1/2 | step 3/10"


def test_the_scripts_own_progress_bar_is_not_drawn_over():
    line, term = _line()
    line.draw("epoch 1/2 | step 3/10")
    _console(line, term, "stdout", KERAS_BAR)
    before = term.getvalue()
    assert before.endswith(KERAS_BAR)  # ours erased first, then the script's bar
    line.draw("epoch 1/2 | step 11/64")
    assert term.getvalue() == before  # the bar keeps the line: no flicker of two bars
    # a complete line after the bar: still the script's for `hold` seconds
    _console(line, term, "stdout", "\n")
    line.draw("epoch 1/2 | step 11/64")
    assert term.getvalue() == before + "\n"


def test_our_line_comes_back_once_the_script_stops_redrawing():
    line, term = _line(hold=0.0)
    _console(line, term, "stdout", KERAS_BAR + "\n")
    line.draw("step 64")
    assert term.getvalue().endswith("\n\rstep 64")


def test_a_message_starts_below_a_line_the_script_left_open():
    line, term = _line()
    _console(line, term, "stdout", KERAS_BAR)
    line.print("tfstudio: advice: train.py:12: ...")
    assert term.getvalue() == KERAS_BAR + "\ntfstudio: advice: train.py:12: ...\n"
    # our own notes from the worker too, and only one newline between lines
    _console(line, term, "stdout", "no newline yet")
    _console(line, term, "tfstudio", "Inspector: skipped\n")
    assert term.getvalue().endswith("no newline yet\ntfstudio: Inspector: skipped\n")
    line.print("tfstudio: run finished")
    assert term.getvalue().endswith("skipped\ntfstudio: run finished\n")


def test_a_log_of_the_script_and_its_epochs_keeps_lines_apart():
    log = io.StringIO()
    line = ProgressLine(log, interactive=False)
    line.shares_terminal = True  # both streams in one log (2>&1)
    _console(line, log, "stdout", KERAS_BAR)
    line.print("tfstudio: epoch 1: loss: 0.64")
    line.draw("never drawn in a log")
    assert log.getvalue() == KERAS_BAR + "\ntfstudio: epoch 1: loss: 0.64\n"
