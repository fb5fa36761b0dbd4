"""A restore in the middle of a real fit, in the real window: every view tells one story.

The rule (docs/controls.md): the run's step goes back to the checkpoint's and counts on;
Keras's epoch loop is not rewound, so the fit goes on in the epoch and at the batch it
was at, ends after the batches it had left, and its epochs end where they really end.
"""

from __future__ import annotations

import pytest

from tfstudio.core.options import RunOptions

pytestmark = pytest.mark.tf

SPE, EPOCHS = 10, 6  # 40 samples in batches of 4: 10 steps an epoch, 60 in the fit

FIT = f"""
import time
import keras
import numpy as np

class Slow(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.03)  # time to pause where the test wants

x = np.random.default_rng(0).random((40, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=4, epochs={EPOCHS}, shuffle=False, verbose=0, callbacks=[Slow()])
"""


def test_restore_mid_fit_status_epoch_lines_and_next_point_agree(
    qtbot, window, write_script, tmp_path
):
    folder = tmp_path / "ck"
    window.control.set_run_options(RunOptions(checkpoint_every=15, checkpoint_dir=str(folder)))
    assert window.open_script(str(write_script(FIT)))
    assert window.run_script()
    progress = lambda: window.status.tracker.progress  # noqa: E731
    qtbot.waitUntil(lambda: progress().global_step >= 32, timeout=120_000)
    window.control.pause_action.trigger()
    qtbot.waitUntil(lambda: window.state() == "paused", timeout=30_000)
    window.bridge.flush()
    held = progress().global_step
    # in the fit's 4th epoch or later (a loaded machine pauses a few steps late): its
    # boundaries at 10, 20, 30...; steps enough left to go on after the restore
    assert 32 <= held <= EPOCHS * SPE - 5, held
    epoch = (held - 1) // SPE + 1  # Keras's epoch (1-based) and batch within it
    batch = held - (epoch - 1) * SPE
    ckpt = str(folder / "ckpt-15")
    qtbot.waitUntil(lambda: ckpt in window.checkpoints.paths(), timeout=10_000)

    window.checkpoints.select(ckpt)
    window.checkpoints.restore_button.click()
    qtbot.waitUntil(lambda: "Restored step 15" in window.checkpoints.message.text(), timeout=30_000)
    window.bridge.flush()
    status = window.status
    end = 15 + EPOCHS * SPE - held  # the batches Keras had left, from the restored step
    assert status.epoch_label.text() == f"epoch {epoch}/{EPOCHS}"  # Keras's loop goes on
    assert status.step_label.text() == f"step {batch}/{SPE} · run step 15"
    assert status.rate_label.text() == "paused at step 15"
    assert f"ends at run step {end}" in status.step_label.toolTip()
    assert status.progress_bar.format() == f"{100 * held / (EPOCHS * SPE):.0f}%"  # rounded
    assert window.metrics.store.epoch_steps == [10.0]  # the boundaries after 15 are gone
    assert window.metrics.xgroup.planned == float(end)

    with qtbot.waitSignal(window.run_finished, timeout=120_000) as finished:
        window.control.pause_action.trigger()  # Resume
    assert finished.args[0] == "finished"
    window.bridge.flush()
    lines = [float(x) for x in window.metrics.plots["loss"].epoch_lines.positions()]
    first_end = 15 + SPE - batch  # where Keras's epoch at the pause really ended
    assert lines == [10.0] + [float(s) for s in range(first_end, end + 1, SPE)]
    assert lines[-1] == end
    xs = window.metrics.store.steps["loss"].series.view()[0]
    after = sorted({float(x) for x in xs if x > 15})
    assert after == [float(s) for s in range(16, end + 1)]  # the next point is step 16
    assert status.epoch_label.text() == f"epoch {EPOCHS}/{EPOCHS}"
    assert status.step_label.text() == f"step {SPE}/{SPE} · run step {end}"
    assert status.progress_bar.format() == "100%"
