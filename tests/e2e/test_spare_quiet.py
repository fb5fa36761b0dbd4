"""A spare worker's TensorFlow start-up lines never reach the window's terminal (issue 52:
54 lines of absl/cudart_stub/cuInit/cpu_feature_guard over an hour of one sitting).

The spare imports TensorFlow in advance; what it prints meanwhile belongs to the run it
takes (folded into one line by the console), and is dropped with a spare that never runs.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from tests.conftest import wait_for
from tfstudio.core.channel import Channel
from tfstudio.core.events import ConsoleOutput
from tfstudio.core.process import ProcessLauncher
from tfstudio.core.tf_startup import is_startup_line
from tfstudio.ui.main_window import MainWindow

pytestmark = pytest.mark.tf

NOISE = ("absl", "cudart_stub", "cuInit", "cpu_feature_guard", "cuda", "oneDNN", "TensorFlow")


def _noise(err: str) -> list[str]:
    return [
        line for line in err.splitlines() if is_startup_line(line) or any(w in line for w in NOISE)
    ]


@pytest.fixture
def all_tf_messages(monkeypatch):
    """Workers print TensorFlow's start-up lines as they do for a user (no log level set)."""
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)


def _ready_spare(launcher: ProcessLauncher) -> int:
    launcher.prepare()
    wait_for(lambda: launcher.spare is not None and launcher.spare.ready.is_set(), 180)
    return launcher.spare.pid


def test_a_spare_that_runs_puts_its_start_up_lines_in_the_runs_console_folded(
    qtbot, tmp_path, write_script, capfd, all_tf_messages
):
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=True)
    win = MainWindow(channel, launcher, QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    qtbot.addWidget(win)
    win.show()
    try:
        spare = _ready_spare(launcher)
        assert win.open_script(str(write_script("import os\nprint('pid', os.getpid())\n")))
        with qtbot.waitSignal(win.run_finished, timeout=120_000):
            assert win.run_script()
        qtbot.waitUntil(lambda: "Run finished" in win.console.text(), timeout=10_000)
        text = win.console.text()
        assert f"pid {spare}" in text  # the spare took the run
        [fold] = win.console.startup_folds()
        assert fold.lines and all(is_startup_line(line) for line in fold.lines)
        assert "TensorFlow start-up:" in text
        assert not any(line in text for line in fold.lines)  # folded: one line, shown on click
        # the next spare is ready; the window closes without it ever running
        _ready_spare(launcher)
    finally:
        launcher.shutdown()
        win.bridge.stop()
    _, err = capfd.readouterr()
    assert _noise(err) == [], err[-3000:]


def test_a_spare_that_never_runs_leaves_nothing_anywhere(capfd, all_tf_messages):
    channel = Channel()
    launcher = ProcessLauncher(channel, keep_spare=True)
    try:
        _ready_spare(launcher)
    finally:
        launcher.shutdown()
    _, err = capfd.readouterr()
    assert _noise(err) == [], err[-3000:]
    assert not [e for e in channel.drain() if isinstance(e, ConsoleOutput)]
