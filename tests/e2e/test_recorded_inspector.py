"""A past run's weights and gradients, written by the real Recorder, in the window's own
inspector tabs: a reopened run is shown in every view as the live one is (issue 56)."""

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


def shown(window, name: str, view: str = "weights"):
    """Pick run ``name`` in the Runs panel and press "Show run": the window's inspector,
    with ``view`` in front."""
    window.runs.select([name])
    window.runs.open_inspector()
    assert window.parts.wait()  # (read on the session's reader thread)
    inspector = window.inspector
    assert inspector.tabs.currentWidget() is getattr(inspector, view)
    assert window.session.shown.name == name and not window.session.shown.live
    inspector.refresh()
    return inspector


def test_a_recorded_run_opens_in_the_inspector_as_it_was(window, qtbot, tmp_path):
    rec = Recorder(tmp_path / "fit-20260101-000000")
    rec.write([RunStarted("/proj/fit.py", ("/proj/fit.py",), "/proj", 0.0, 1)])
    steps = [10, 20, 30, 40]
    for s in steps:
        rec.write([_weights(s), _gradients(s)])
    rec.close(RunEnded("finished", 0, 1, 40, 1.0))

    window.runs.set_logdir(tmp_path)
    assert window.runs.tree.topLevelItemCount() == 1
    inspector = shown(window, "fit-20260101-000000")
    store = inspector.store
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
    rows = inspector.weights.rows
    assert list(rows) == ["m/dense/kernel", "m/w"]
    assert rows["m/w"].lines.curves["value"].getData()[1][-1] == pytest.approx(2.95)
    assert rows["m/dense/kernel"].heatmap.has_image
    assert "(3, 2)" in rows["m/dense/kernel"].header.text()
    assert "Recorded in run 'fit-20260101-000000': 4 samples" in inspector.weights.info.text()
    assert window.grab().save(str(tmp_path / "recorded_inspector.png"))
    inspector.tabs.setCurrentWidget(inspector.gradients)
    assert list(inspector.gradients.rows) == ["m/dense/kernel"]


def _recorded(folder, scale: float) -> None:
    rec = Recorder(folder)
    rec.write([RunStarted("/proj/fit.py", ("/proj/fit.py",), "/proj", 0.0, 1)])
    for s in (10, 20):
        g = _gradients(s)
        rec.write([_weights(s), GradientStats(0, s, scale * g.global_norm, g.variables)])
    rec.close(RunEnded("finished", 0, 1, 20, 1.0))


def test_show_run_keeps_the_inspector_view_the_user_compares_in(window, qtbot, tmp_path):
    # comparing two runs' gradients: "Show run" on the second stays on Gradients
    _recorded(tmp_path / "a-20260101-000000", 1.0)
    _recorded(tmp_path / "b-20260101-000001", 3.0)
    window.runs.set_logdir(tmp_path)
    inspector = shown(window, "a-20260101-000000")
    assert inspector.store.global_norm.scalars["norm"] == pytest.approx([1.0, 0.5])
    inspector.tabs.setCurrentWidget(inspector.gradients)
    inspector = shown(window, "b-20260101-000001", view="gradients")
    assert inspector.store.global_norm.scalars["norm"] == pytest.approx([3.0, 1.5])
    assert list(inspector.gradients.rows) == ["m/dense/kernel"]
    inspector.tabs.setCurrentIndex(0)  # back on the metrics: the view looked at last again
    shown(window, "a-20260101-000000", view="gradients")


def test_histograms_of_a_foreign_log_dir_show_as_heat_maps(window, qtbot, tmp_path):
    import tensorflow as tf

    logdir = tmp_path / "keras-logs"
    writer = tf.summary.create_file_writer(str(logdir))
    rng = np.random.default_rng(0)
    with writer.as_default():
        for step in range(5):
            tf.summary.histogram("dense/kernel", rng.normal(step, 1.0, 500), step=step)
    writer.close()

    window.runs.open_folder(logdir)
    assert window.runs.tree.topLevelItemCount() == 1
    inspector = shown(window, "keras-logs")
    history = inspector.store.weights["dense/kernel"]
    assert history.steps == [0, 1, 2, 3, 4]
    # the mean comes from the buckets: it follows the distribution's centre
    assert history.scalars["mean"] == pytest.approx([0, 1, 2, 3, 4], abs=0.3)
    assert sum(history.hists[0]) == 500
    row = inspector.weights.rows["dense/kernel"]
    assert row.heatmap.has_image and set(row.lines.curves) == {"L2 norm", "std"}


def test_a_run_without_histograms_says_so(window, qtbot, tmp_path):
    rec = Recorder(tmp_path / "plain-20260101-000000")
    rec.close(RunEnded("finished", 0, 1, 0, 1.0))
    window.runs.set_logdir(tmp_path)
    assert window.runs.tree.topLevelItemCount() == 1
    inspector = shown(window, "plain-20260101-000000")
    assert not inspector.store.weights
    assert inspector.weights.info.text().startswith("No weights were sampled")


def test_a_run_folder_named_by_a_url_opens_too(window, tmp_path):
    url = f"file://{tmp_path}/fit-20260101-000000"
    rec = Recorder(url)  # written through tf.io.gfile, read through TensorBoard's layer
    rec.write([_weights(10), _gradients(10), _weights(20), _gradients(20)])
    rec.close(RunEnded("finished", 0, 1, 20, 1.0))
    model = window.show_run(url)
    assert window.parts.wait()
    assert window.inspector.store is model.inspector
    assert model.inspector.weights["m/dense/kernel"].steps == [10, 20]
    assert model.inspector.shapes["m/dense/kernel"] == (3, 2)
