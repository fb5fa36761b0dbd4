"""A past run's weights and gradients, written by the real Recorder, in the inspector's views."""

from __future__ import annotations

import numpy as np
import pytest

from tfstudio.core.events import (
    GradientStats,
    GradientVariable,
    RunEnded,
    RunStarted,
    VariableStats,
    WeightStats,
)
from tfstudio.engine.recorder import Recorder

pytestmark = pytest.mark.tf


def _weights(step: int) -> WeightStats:
    w = 3.0 - 2.0 / step  # a scalar W converging
    hist = tuple(range(step % 5, step % 5 + 8))
    return WeightStats(
        0,
        step,
        (
            VariableStats(
                "m/dense/kernel", (3, 2), 0.1 * step, 0.5, -1.0, 1.0 + step, 2.0, 0.0, hist
            ),
            VariableStats("m/w", (), w, 0.0, w, w, abs(w), 0.0, (1,), (w,)),
        ),
    )


def _gradients(step: int) -> GradientStats:
    return GradientStats(
        0,
        step,
        10.0 / step,
        (GradientVariable("m/dense/kernel", 5.0 / step, -0.5, 0.5, (1, 2, 3)),),
    )


@pytest.fixture
def panel(runs_panel):
    return runs_panel


def test_a_recorded_run_opens_in_the_inspector_as_it_was(panel, qtbot, tmp_path):
    rec = Recorder(tmp_path / "fit-20260101-000000")
    rec.write([RunStarted("/proj/fit.py", ("/proj/fit.py",), "/proj", 0.0, 1)])
    steps = [10, 20, 30, 40]
    for s in steps:
        rec.write([_weights(s), _gradients(s)])
    rec.close(RunEnded("finished", 0, 1, 40, 1.0))

    panel.set_logdir(tmp_path)
    panel.select(["fit-20260101-000000"])
    window = panel.open_inspector()
    store = window.store
    kernel = store.weights["m/dense/kernel"]
    assert kernel.steps == steps
    assert kernel.scalars["mean"] == pytest.approx([0.1 * s for s in steps])
    assert kernel.hists == [_weights(s).variables[0].hist for s in steps]
    assert kernel.ranges == [(-1.0, pytest.approx(1.0 + s)) for s in steps]
    assert store.shapes["m/dense/kernel"] == (3, 2)
    w = store.weights["m/w"]
    assert [v[0] for v in w.values] == pytest.approx([3.0 - 2.0 / s for s in steps])
    assert store.global_norm.scalars["norm"] == pytest.approx([10.0 / s for s in steps])
    assert store.gradients["m/dense/kernel"].scalars["norm"] == pytest.approx(
        [5.0 / s for s in steps]
    )

    qtbot.wait(50)
    rows = window.weights.rows
    assert list(rows) == ["m/dense/kernel", "m/w"]
    assert rows["m/w"].lines.curves["value"].getData()[1][-1] == pytest.approx(2.95)
    assert rows["m/dense/kernel"].heatmap.has_image
    assert "(3, 2)" in rows["m/dense/kernel"].header.text()
    assert "Recorded in run 'fit-20260101-000000': 4 samples" in window.weights.info.text()
    assert window.grab().save(str(tmp_path / "recorded_inspector.png"))
    window.tabs.setCurrentWidget(window.gradients)
    assert list(window.gradients.rows) == ["m/dense/kernel"]


def test_histograms_of_a_foreign_log_dir_show_as_heat_maps(panel, tmp_path):
    import tensorflow as tf

    logdir = tmp_path / "keras-logs"
    writer = tf.summary.create_file_writer(str(logdir))
    rng = np.random.default_rng(0)
    with writer.as_default():
        for step in range(5):
            tf.summary.histogram("dense/kernel", rng.normal(step, 1.0, 500), step=step)
    writer.close()

    panel.open_folder(logdir)
    panel.select(["keras-logs"])
    window = panel.open_inspector()
    history = window.store.weights["dense/kernel"]
    assert history.steps == [0, 1, 2, 3, 4]
    # the mean comes from the buckets: it follows the distribution's centre
    assert history.scalars["mean"] == pytest.approx([0, 1, 2, 3, 4], abs=0.3)
    assert sum(history.hists[0]) == 500
    row = window.weights.rows["dense/kernel"]
    assert row.heatmap.has_image and set(row.lines.curves) == {"mean", "std"}


def test_a_run_without_histograms_says_so(panel, tmp_path):
    rec = Recorder(tmp_path / "plain-20260101-000000")
    rec.close(RunEnded("finished", 0, 1, 0, 1.0))
    panel.set_logdir(tmp_path)
    panel.select(["plain-20260101-000000"])
    window = panel.open_inspector()
    assert window.events == []
    assert not window.store.weights


def test_a_run_folder_named_by_a_url_opens_too(qtbot, tmp_path):
    from tfstudio.ui.panels.recorded_inspector import RecordedInspector

    url = f"file://{tmp_path}/fit-20260101-000000"
    rec = Recorder(url)  # written through tf.io.gfile, read through TensorBoard's layer
    rec.write([_weights(10), _gradients(10), _weights(20), _gradients(20)])
    rec.close(RunEnded("finished", 0, 1, 20, 1.0))
    window = RecordedInspector(url)
    qtbot.addWidget(window)
    assert window.store.weights["m/dense/kernel"].steps == [10, 20]
    assert window.store.shapes["m/dense/kernel"] == (3, 2)
