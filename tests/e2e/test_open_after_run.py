"""Real runs in the real window: opening another script after a finished run and after a
failed one leaves the same clean state (the new script's own previous run faint behind)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.ui.test_open_another_script import _state

pytestmark = pytest.mark.tf

A = """
import sys
import keras
import numpy as np

x = np.random.default_rng(0).random((32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])
model.fit(x, y, batch_size=4, epochs=2, verbose=0)
if "fail" in sys.argv:
    raise ValueError("a failed run of a.py")
"""

B = """
import keras
import numpy as np

x = np.random.default_rng(1).random((24, 3)).astype("float32")
y = x.mean(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=4, epochs=1, verbose=0)
"""


def test_open_b_after_a_finished_and_after_a_failed_run_of_a(qtbot, window, write_script, tmp_path):
    a, b = write_script(A, "a.py"), write_script(B, "b.py")
    window.run_options = dataclasses.replace(window.run_options, logdir=str(tmp_path / "runs"))
    assert window.open_script(str(b)) and window.run_script()  # b's previous run
    with qtbot.waitSignal(window.run_finished, timeout=120_000) as ended:
        pass
    assert ended.args[0] == "finished"

    def run_a_then_open_b(args: list[str]) -> dict:
        assert window.open_script(str(a)) and window.run_script(args)
        with qtbot.waitSignal(window.run_finished, timeout=120_000) as ended:
            pass
        assert ended.args[0] == ("failed" if args else "finished")
        window.bridge.flush()
        assert "epoch 2/2" in window.status.summary() and window.metrics.store.global_step
        assert window.open_script(str(b))
        qtbot.waitUntil(lambda: not window.runs.loading() and window.runs.loader.idle())
        window.runs.poll()
        window.bridge.flush()
        return _state(window)

    after_finished = run_a_then_open_b([])
    after_failed = run_a_then_open_b(["fail"])
    assert after_finished == after_failed
    assert after_failed["status"] == after_failed["state"]  # no epoch, step, speed or loss
    assert after_failed["live steps"] == 0 and after_failed["live lines"] == []
    assert after_failed["layers"] == [("previous run", True)]  # b's, faint
    assert after_failed["notices"] == [] and after_failed["checkpoints"] == []
    assert "mae" not in window.metrics.plots  # a's metric: nothing of a's run is drawn
