"""Fixtures for UI tests: a real MainWindow offscreen, a fake launcher, synthetic runs.

No TensorFlow here: the launcher records calls and the tests put core events on
the channel themselves, then run one bridge frame.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402

from tfstudio.core.channel import Channel  # noqa: E402
from tfstudio.core.events import (  # noqa: E402
    ConsoleOutput,
    EngineStatus,
    EpochEnded,
    FitEnded,
    FitStarted,
    ModelSummary,
    RunEnded,
    RunStarted,
    ScriptError,
    StepEnded,
)
from tfstudio.ui.main_window import MainWindow  # noqa: E402


class FakeLauncher:
    """Records calls; ``start`` announces the run on the channel like the engine would."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.calls: list[tuple] = []
        self.running = False
        self.refuse: Exception | None = None

    def start(self, script, args=(), options=None):
        self.calls.append(("start", script, tuple(args)))
        self.options = options
        if self.refuse is not None:
            raise self.refuse
        self.running = True
        argv = (os.path.basename(script), *args)
        self.channel.emit(RunStarted(script, argv, os.path.dirname(script), 0.0))

    def stop(self):
        self.calls.append(("stop",))

    def send(self, command):
        self.calls.append(("send", command))

    def is_running(self):
        return self.running


class SyntheticRun:
    """Builds core events for a fake run and puts them on the channel.

    Every method only queues; ``frame()`` runs one bridge frame (what the timer does).
    """

    def __init__(self, window: MainWindow, launcher: FakeLauncher) -> None:
        self.window = window
        self.launcher = launcher
        self.channel = window.channel
        self.global_step = 0
        self.time = 0.0
        self.fit_index = -1
        self.spe = 1
        self.steps_per_epoch: int | None = None

    def emit(self, *events):
        for event in events:
            self.channel.emit(event)
        return self

    def frame(self):
        """One bridge frame, then the redraw a live run may have deferred (see Bridge)."""
        handled = self.window.bridge.tick()
        self.window.bridge.flush()
        return handled

    def started(self, script="/tmp/train.py"):
        self.launcher.running = True
        return self.emit(RunStarted(script, (os.path.basename(script),), "/tmp", 0.0))

    def fit(self, epochs=3, steps_per_epoch=10, spe=1, name="mlp", initial_epoch=0):
        self.fit_index += 1
        self.spe = spe
        self.steps_per_epoch = steps_per_epoch
        model = ModelSummary(name, "Sequential", (), 100, 100)
        return self.emit(
            FitStarted(
                self.fit_index,
                model,
                epochs,
                initial_epoch,
                steps_per_epoch,
                spe,
                self.global_step,
                self.time,
            )
        )

    def steps(self, n, epoch=0, values=None, running=None, dt=0.01, start=0):
        """``n`` hooks; values/running are callables of the global step (or dicts)."""
        if values is None:
            values = lambda g: {"loss": 1.0 / g, "accuracy": 1 - 1.0 / g}  # noqa: E731
        if running is None:
            running = values
        for i in range(n):
            self.global_step += self.spe
            self.time += dt
            g = self.global_step
            v = values(g) if callable(values) else values
            r = running(g) if callable(running) else running
            step = start + (i + 1) * self.spe
            self.emit(StepEnded(self.fit_index, g, epoch, step, self.spe, v, r, self.time))
        return self

    def epoch_end(self, epoch, **metrics):
        return self.emit(EpochEnded(self.fit_index, epoch, self.global_step, metrics, self.time))

    def fit_end(self, stopped=False):
        return self.emit(FitEnded(self.fit_index, self.global_step, stopped, self.time))

    def console(self, stream, text):
        return self.emit(ConsoleOutput(stream, text))

    def engine(self, state, detail=""):
        return self.emit(EngineStatus(state, detail))

    def ended(self, status="finished", exit_code=0, fits=None, error=None, message=""):
        self.launcher.running = False
        fits = self.fit_index + 1 if fits is None else fits
        return self.emit(
            RunEnded(status, exit_code, fits, self.global_step, self.time, error, message)
        )


@pytest.fixture
def channel():
    return Channel()


@pytest.fixture
def launcher(channel):
    return FakeLauncher(channel)


@pytest.fixture
def settings(tmp_path):
    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    yield s
    s.clear()


@pytest.fixture
def window(qtbot, channel, launcher, settings):
    w = MainWindow(channel, launcher, settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.bridge.stop()


@pytest.fixture
def run(window, launcher):
    return SyntheticRun(window, launcher)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("print('hello')\n")
    return path


@pytest.fixture
def script_error():
    """Factory of ScriptErrors as the engine reports them."""
    return _script_error


def _script_error(filename="/work/proj/train.py", lineno=12):
    tb = (
        "Traceback (most recent call last):\n"
        f'  File "{filename}", line {lineno}, in <module>\n'
        "    1 / 0\n"
        "ZeroDivisionError: division by zero\n"
    )
    return ScriptError("ZeroDivisionError", "division by zero", filename, lineno, tb)
