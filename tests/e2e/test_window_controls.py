"""The real window with the real engine: a NaN pauses the run, the dock restores, Stop ends it."""

from __future__ import annotations

import pytest

from tests.engine.test_controls import NAN_AT_STEP_7
from tfstudio.core.options import RunOptions

pytestmark = pytest.mark.tf


def test_nan_pause_restore_from_the_dock_then_stop(qtbot, window, write_script, tmp_path):
    folder = tmp_path / "ck"
    window.control.set_run_options(RunOptions(checkpoint_every=3, checkpoint_dir=str(folder)))
    assert window.open_script(str(write_script(NAN_AT_STEP_7)))
    assert window.run_script()
    qtbot.waitUntil(lambda: window.state() == "paused", timeout=120_000)
    assert "NaN at step 7 in ratio" in window.status.state_text()
    # the dock redraws with the next (budgeted) frame, the last good checkpoint selected
    last_good = str(folder / "ckpt-6")
    qtbot.waitUntil(lambda: window.checkpoints.selected() == last_good, timeout=10_000)
    assert window.checkpoints.paths() == [str(folder / "ckpt-3"), last_good]
    window.checkpoints.restore_button.click()
    qtbot.waitUntil(lambda: "Restored step 6" in window.checkpoints.message.text(), timeout=30_000)
    assert (6, "restored step 6") in window.metrics.marks()
    window.bridge.flush()
    window.grab().save(str(tmp_path / "window.png"))
    assert window.state() == "paused"  # still held: the user decides to resume or stop
    assert "restored step 6" in window.status.state_text()
    with qtbot.waitSignal(window.run_finished, timeout=60_000) as ended:
        window.stop_action.trigger()
    assert ended.args[0] == "stopped"
    assert "graph · traced" in window.control.mode_label.text()
