"""The headless terminal: the progress line, the script's output and tfstudio's lines, in order."""

import dataclasses
import io

from tfstudio.core.events import (
    ConsoleOutput,
    EpochEnded,
    FitEnded,
    FitStarted,
    ModelBuilt,
    ModelSummary,
    RunDevices,
    RunEnded,
    RunStarted,
)
from tfstudio.headless import ProgressLine, TerminalView, terminal_words

KERAS_BAR = "\r\x1b[1m11/64\x1b[0m ━━━━ 0s 5ms/step - loss: 0.6434"
CLOCK = 1000.0  # the worker's run clock started at this perf_counter() reading


def _view(interactive: bool = True) -> tuple[TerminalView, io.StringIO]:
    term = io.StringIO()  # stdout and stderr on one terminal
    line = ProgressLine(term, interactive=interactive, hz=1e9, hold=60.0)
    line.shares_terminal = True
    view = TerminalView(line, term, term, started=CLOCK - 5.0)
    view.take(RunStarted("/t.py", ("/t.py",), "/", 0.0, 1, CLOCK), CLOCK)
    return view, term


def _fit(index: int = 0, number: int = 1, verbose: int = 0, built: bool = True, t: float = 1.0):
    params = 5 if built else 0
    model = ModelSummary("m", "Sequential", (), params, params, built)
    return FitStarted(index, model, 1, 0, 2, 1, 0, t, verbose=verbose, number=number)


def test_our_line_is_drawn_while_the_script_is_quiet():
    line = ProgressLine(io.StringIO(), interactive=True, hz=1e9, hold=60.0)
    line.script_wrote("loading data\n")
    line.draw("epoch 1/2 | step 3/10")
    assert line.out.getvalue() == "\repoch 1/2 | step 3/10"


def test_the_scripts_own_progress_bar_is_not_drawn_over():
    view, term = _view()
    view.take(ConsoleOutput("stdout", KERAS_BAR), CLOCK + 1)
    view.release(CLOCK + 1, everything=True)
    before = term.getvalue()
    assert before.endswith(KERAS_BAR)
    view.line.draw("epoch 1/2 | step 11/64")
    assert term.getvalue() == before  # the bar keeps the line: no flicker of two bars


def test_script_output_waits_for_the_engines_lines_dated_before_it():
    view, term = _view(interactive=False)
    view.take(ConsoleOutput("stdout", "loop epoch 0\n"), CLOCK + 2.0)  # arrives first
    view.release(CLOCK + 2.1)
    assert term.getvalue() == ""  # held: the engine may still tell of something before it
    loop = FitStarted(
        0, ModelSummary("net", "custom loop", (), 3, 3), 0, 0, None, 1, 0, 1.9, "loop", 1
    )
    view.take(loop, CLOCK + 2.2)  # dated 1.9 s into the run: before the script's line
    view.release(CLOCK + 2.2)
    assert term.getvalue() == "tfstudio: loop 1: net (custom training loop)\n"
    view.release(CLOCK + 2.0 + view.hold)
    assert term.getvalue() == "tfstudio: loop 1: net (custom training loop)\nloop epoch 0\n"


def test_script_output_goes_out_after_the_hold_when_no_event_comes():
    view, term = _view(interactive=False)
    view.take(ConsoleOutput("stdout", "loading\n"), CLOCK + 1.0)
    view.release(CLOCK + 1.0 + view.hold / 2)
    assert term.getvalue() == ""
    view.release(CLOCK + 1.0 + view.hold)
    assert term.getvalue() == "loading\n"


def test_our_lines_wait_for_the_end_of_a_line_the_script_holds_open():
    view, term = _view()
    view.take(ConsoleOutput("stdout", "Epoch 1/2\n" + KERAS_BAR), CLOCK + 1)
    view.take(ConsoleOutput("tfstudio", "Inspector: a note\n"), CLOCK + 1.1)
    view.release(CLOCK + 5)
    assert "tfstudio" not in term.getvalue()  # the bar is not cut
    view.take(ConsoleOutput("stdout", "\r64/64 ━━━━ 1s - loss: 0.5\nEpoch 2/2\n"), CLOCK + 6)
    view.release(CLOCK + 9)
    assert term.getvalue().endswith(
        "\r64/64 ━━━━ 1s - loss: 0.5\ntfstudio: Inspector: a note\nEpoch 2/2\n"
    )


def test_fit_lines_number_fits_apart_from_loops_and_count_parameters_once_built():
    view, term = _view(interactive=False)
    view.take(RunDevices(("CPU",)), CLOCK + 0.5)
    view.take(_fit(index=2, number=1, built=False), CLOCK + 1.1)
    view.take(ModelBuilt(2, 46, 46), CLOCK + 1.2)
    view.take(EpochEnded(2, 0, 2, {"loss": 0.25}, 1.3), CLOCK + 1.3)
    view.take(FitEnded(2, 2, False, 1.4), CLOCK + 1.4)
    view.take(RunEnded("finished", 0, 1, 2, 1.5, loops=2), CLOCK + 1.5)
    view.finish()
    assert term.getvalue().splitlines() == [
        "tfstudio: device: CPU",
        "tfstudio: fit 1: m (Sequential, not built yet), 1 epoch",
        "tfstudio: fit 1: model built: 46 params",
        "tfstudio: fit 1 done: 1 epoch, 2 steps - loss: 0.25",
        # the run's length from tfstudio run's own start (5 s before the worker's clock)
        "tfstudio: Run finished after 0:06: 1 fit, 2 loops, 2 steps (exit code 0)",
    ]


def test_a_fit_that_prints_its_epochs_gets_no_line_of_ours_per_epoch_or_at_its_end():
    view, term = _view(interactive=False)
    view.take(_fit(verbose=2), CLOCK + 1.0)
    for epoch in range(3):
        view.take(EpochEnded(0, epoch, epoch + 1, {"loss": 0.5}, 1.1 + epoch), CLOCK + 2 + epoch)
    view.take(FitEnded(0, 3, False, 4.5), CLOCK + 4.6)
    view.finish()
    assert term.getvalue() == "tfstudio: fit 1: m (Sequential, 5 params), 1 epoch\n"


def test_a_resumed_fit_says_the_epochs_it_runs_as_keras_numbers_them():
    # fit(epochs=12, initial_epoch=10) runs 2 epochs, shown by Keras as 11/12 and 12/12
    view, term = _view(interactive=False)
    model = ModelSummary("m", "Sequential", (), 5, 5, True)
    view.take(FitStarted(0, model, 12, 10, 2, 1, 0, 1.0, verbose=0, number=1), CLOCK + 1)
    for epoch in (10, 11):
        view.take(EpochEnded(0, epoch, epoch - 8, {"loss": 0.5}, 1.1 + epoch), CLOCK + epoch)
    view.take(FitEnded(0, 4, False, 14.0), CLOCK + 14)
    view.finish()
    assert term.getvalue().splitlines() == [
        "tfstudio: fit 1: m (Sequential, 5 params), 2 epochs (11-12 of 12)",
        "tfstudio: fit 1 done: 2 epochs, 4 steps - loss: 0.5",
    ]


def test_tensorflow_start_up_lines_fold_into_one_line_said_when_training_starts(tmp_path):
    view, term = _view(interactive=False)
    startup = (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1795485259.405270    3261 cudart_stub.cc:31] Could not find cuda drivers\n"
    )
    view.take(ConsoleOutput("stderr", startup, native=True), CLOCK + 0.1)
    view.take(ConsoleOutput("stdout", "loading\n"), CLOCK + 0.2)
    view.take(_fit(t=0.3), CLOCK + 0.3)
    view.take(ConsoleOutput("stderr", "a C++ warning of the script's\n", native=True), CLOCK + 1)
    view.run_dir = str(tmp_path)
    view.finish()
    assert term.getvalue().splitlines() == [
        "loading",
        "tfstudio: TensorFlow started (2 start-up lines hidden; --verbose shows them)",
        "tfstudio: fit 1: m (Sequential, 5 params), 1 epoch",
        "a C++ warning of the script's",
    ]
    assert (tmp_path / "startup.log").read_text() == startup


def test_a_run_without_training_says_tensorflow_started_before_it_ended(tmp_path):
    view, term = _view(interactive=False)
    startup = "I0000 00:00:1795485259.405270    3261 cudart_stub.cc:31] Could not find cuda\n"
    view.take(ConsoleOutput("stderr", startup, native=True), CLOCK + 0.1)
    view.take(ConsoleOutput("stdout", "hello\n"), CLOCK + 0.2)
    view.take(RunEnded("finished", 0, 0, 0, 0.5), CLOCK + 0.5)
    view.finish()
    lines = term.getvalue().splitlines()
    assert lines[:2] == [
        "hello",
        "tfstudio: TensorFlow started (1 start-up line hidden; --verbose shows them)",
    ]
    assert lines[2].startswith("tfstudio: Run finished after ")


def test_the_terminal_has_no_window_words():
    note = (
        "Inspector: gradients start after about 276 s of training (a fixed cadence shows "
        "them at once: every N steps in the Model dock, or --sample-every N)"
    )
    assert terminal_words(note) == (
        "Inspector: gradients start after about 276 s of training (a fixed cadence shows "
        "them at once: --sample-every N)"
    )


def test_off_a_terminal_a_long_silent_fit_says_how_far_it_got_once_a_minute():
    view, term = _view(interactive=False)
    view.take(_fit(t=1.0), CLOCK + 1.0)
    view.release(CLOCK + 2.0)
    assert term.getvalue() == "tfstudio: fit 1: m (Sequential, 5 params), 1 epoch\n"
    view.release(CLOCK + 30.0)  # nothing more within a minute
    view.release(CLOCK + 63.0)
    assert term.getvalue().splitlines()[1:] == [
        "tfstudio: [....................]   0% epoch 1/1 | step 0/2 | 0 steps/s | ETA --"
    ]


def test_a_fits_lines_go_exactly_where_its_output_mark_says_among_the_scripts_output():
    view, term = _view(interactive=False)
    view.take(ConsoleOutput("stdout", "before\n"), CLOCK + 1.0)
    # the fit began after 7 bytes of the script's stdout ("before\n"); its line arrives late
    view.take(ConsoleOutput("stdout", "epoch 1\nepoch 2\nafter the fit\n"), CLOCK + 3.0)
    started = _fit(t=1.5)
    view.take(dataclasses.replace(started, output=(7, 0)), CLOCK + 3.1)
    # it ended after "epoch 2\n" (bytes 7 + 16), before "after the fit": one piece of output
    view.take(EpochEnded(0, 0, 2, {"loss": 0.25}, 2.9), CLOCK + 3.1)
    view.take(FitEnded(0, 2, False, 2.95, (23, 0)), CLOCK + 3.2)
    view.finish()
    assert term.getvalue().splitlines() == [
        "before",
        "tfstudio: fit 1: m (Sequential, 5 params), 1 epoch",
        "epoch 1",
        "epoch 2",
        "tfstudio: fit 1 done: 1 epoch, 2 steps - loss: 0.25",
        "after the fit",
    ]


def test_a_fits_end_before_the_output_after_it_that_came_in_the_same_batch():
    view, term = _view(interactive=False)
    view.take(dataclasses.replace(_fit(t=0.5), output=(0, 0)), CLOCK + 1.0)
    view.take(ConsoleOutput("stdout", "epoch 1\n"), CLOCK + 1.5)
    view.release(CLOCK + 3.0)  # out already
    view.take(EpochEnded(0, 0, 2, {"loss": 0.5}, 2.9), CLOCK + 3.1)
    view.take(FitEnded(0, 2, False, 2.95, (8, 0)), CLOCK + 3.1)
    view.take(ConsoleOutput("stdout", "after the fit\n"), CLOCK + 3.1)  # the same batch
    view.finish()
    assert term.getvalue().splitlines()[-2:] == [
        "tfstudio: fit 1 done: 1 epoch, 2 steps - loss: 0.5",
        "after the fit",
    ]
