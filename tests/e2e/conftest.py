"""The real window with a real process launcher (workers run the scripts), for e2e tests."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from tfstudio.core.channel import Channel
from tfstudio.core.process import ProcessLauncher
from tfstudio.ui.main_window import MainWindow


@pytest.fixture
def window(qtbot, tmp_path):
    """A shown MainWindow whose runs go to worker processes; every worker is reaped after."""
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    win = MainWindow(channel, launcher, QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    qtbot.addWidget(win)
    win.show()
    yield win
    launcher.shutdown()
    win.bridge.stop()
