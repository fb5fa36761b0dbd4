"""The real window with the real engine: a NaN pauses the run, the dock restores, Stop ends it."""

from __future__ import annotations

import pytest

from tests.engine.test_controls import NAN_AT_STEP_7
from tfstudio.core.options import RunOptions

pytestmark = pytest.mark.tf


def test_nan_pause_restore_from_the_dock_then_stop(qtbot, window, write_script, tmp_path):
    folder = tmp_path / "ck"
    options = RunOptions(checkpoint_every=3, checkpoint_dir=str(folder), nan_batch=True)
    window.control.set_run_options(options)
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
    assert window.status.rate_label.text() == "paused at step 6"  # not a (negative) rate
    assert window.system.pauses and not any(  # a gap in the step-time line, not a slow step
        y > 1000.0 for y in window.system.steps.view()[1] if y == y
    )
    with qtbot.waitSignal(window.run_finished, timeout=60_000) as ended:
        window.stop_action.trigger()
    assert ended.args[0] == "stopped"
    assert "graph · traced" in window.control.mode_label.text()


LONG_FIT = """
import keras
import numpy as np

x = np.random.default_rng(0).random((4000, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=2, epochs=50, verbose=0)
"""


def test_pause_then_resume_shows_paused_and_leaves_a_gap_not_a_slow_step(
    qtbot, window, write_script
):
    assert window.open_script(str(write_script(LONG_FIT)))
    assert window.run_script()
    steps = lambda: window.status.tracker.progress.global_step  # noqa: E731
    qtbot.waitUntil(lambda: steps() > 200, timeout=120_000)
    window.control.pause_action.trigger()
    qtbot.waitUntil(lambda: window.state() == "paused", timeout=30_000)
    held = steps()
    window.bridge.flush()
    assert window.status.rate_label.text() == f"paused at step {held:,}"
    qtbot.wait(3000)  # paused for 3 s: a step-time point carrying it would read ~3,000 ms
    window.control.pause_action.trigger()
    qtbot.waitUntil(lambda: steps() > held + 300, timeout=60_000)
    qtbot.waitUntil(lambda: "steps/s" in window.status.rate_label.text(), timeout=10_000)
    rate = window.status.rate_label.text()
    assert not rate.startswith("-") and rate != "-- steps/s"
    with qtbot.waitSignal(window.run_finished, timeout=60_000):
        window.stop_action.trigger()
    (start, end), *_ = window.system.pauses
    assert end - start >= 2.5
    ms = [y for y in window.system.steps.view()[1] if y == y]
    assert ms and max(ms) < 1500.0, f"a step-time point carries the pause: {max(ms):.0f} ms"
