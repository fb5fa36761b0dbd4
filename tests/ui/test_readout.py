"""The hover readout: inside the plot, one run per row, this plot's family only, one at a time.

A live run with its previous run behind it and two picked runs, in a 1600x1000 window
(issue 52: the readout ran off the bottom of each plot, listed every family of the
previous run in every plot, and an old readout stayed on another plot).
"""

from __future__ import annotations

import json
import re
import time

import pytest
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtWidgets import QApplication

from tests.core.tfevents import write_events
from tfstudio.core.events import RunStarted
from tfstudio.ui.panels.metric_plot import PER_FIT

N = 20


def recorded(logdir, name, base, script, started):
    """A run folder: per-step loss and accuracy, val_loss at steps 10 and 20."""
    write_events(
        logdir / name,
        {
            "step/loss": [(g, base - 0.01 * g) for g in range(1, N + 1)],
            "step/accuracy": [(g, 0.5 + 0.01 * g) for g in range(1, N + 1)],
            "epoch/val_loss": [(10, base + 0.5), (20, base + 0.25)],
        },
    )
    info = {
        "status": "finished",
        "script": script,
        "start_time": started,
        "steps": N,
        "segments": [{"kind": "fit", "index": 0, "model": "m", "start_step": 0}],
    }
    (logdir / name / "run.json").write_text(json.dumps(info))


def plain(plot):
    return plot._readout.toPlainText()


def shown(plot):
    return plot._readout.isVisible()


def inside(plot):
    """Whether the readout box lies within the plot's data area (scene pixels)."""
    area, box = plot.vb.sceneBoundingRect(), plot._readout.sceneBoundingRect()
    return area.contains(box), area, box


def hover(plot, x):
    """What moving the mouse over the plot at step ``x`` does (a scene mouse move)."""
    (_, _), (y0, y1) = plot.vb.viewRange()
    pos = plot.vb.mapViewToScene(QPointF(x, (y0 + y1) / 2))
    plot.widget.scene().sigMouseMoved.emit(pos)


@pytest.fixture
def four_runs(window, run, qtbot, tmp_path):
    """The live run (loss, accuracy, val_loss), its previous run, two picked runs."""
    window.resize(1600, 1000)
    recorded(tmp_path, "train-20260101-000000", 3.0, "/tmp/train.py", 1.0)
    recorded(tmp_path, "alpha-20260101-000001", 4.0, "/tmp/alpha.py", 2.0)
    recorded(tmp_path, "beta-20260101-000002", 5.0, "/tmp/beta.py", 3.0)
    window.runs.set_logdir(tmp_path)
    run.emit(RunStarted("/tmp/train.py", ("train.py",), "/tmp", time.time()))
    values = lambda g: {"loss": 1.0 / g, "accuracy": 1 - 1.0 / g}  # noqa: E731
    run.fit(epochs=2, steps_per_epoch=10).steps(10, values=values)
    run.epoch_end(0, loss=0.3, val_loss=0.4).steps(10, epoch=1, values=values, start=10).frame()
    window.runs.select(["alpha-20260101-000001", "beta-20260101-000002"])
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=30_000)
    window.runs.poll()
    qtbot.waitExposed(window)
    metrics = window.metrics
    metrics.set_smoothing(0.0)  # the values as recorded
    qtbot.waitUntil(
        lambda: (
            (window.bridge.flush() or True)
            and len(metrics.plots["loss"].layers) == 3
            and all(
                key in layer.curves
                for layer in metrics.plots["loss"].layers
                for key in ("loss", "val_loss", "accuracy")
            )
        ),
        timeout=10_000,
    )
    QApplication.processEvents()
    return metrics


def test_the_readout_lists_each_run_of_this_plots_family_inside_the_plot(four_runs):
    loss, accuracy = four_runs.plots["loss"], four_runs.plots["accuracy"]
    assert {layer.name for layer in loss.layers} == {
        "previous run",
        "alpha-20260101-000001",
        "beta-20260101-000002",
    }
    for plot in (loss, accuracy):  # each other run is named in every plot's legend
        labels = plot.legend_labels()
        for name in ("previous run", "alpha-20260101-000001", "beta-20260101-000002"):
            assert labels.count(name) == 1, (plot.family, labels)
    hover(loss, 15.2)  # (not 15: val points at 10 and 20 tie there, decided by rounding)
    assert shown(loss)
    text = plain(loss)
    lines = text.splitlines()
    assert lines[0].startswith("step 15")
    # the live run's lines, each value exact; then one row per other run, loss and val_loss
    assert "loss (per step): 0.066667" in text and "smoothed" not in text
    assert "val_loss: 0.4" in text
    # (one fit each: no fit named)
    assert "previous run train-20260101-000000: loss 2.85, val_loss 3.25" in text
    assert "alpha-20260101-000001: loss 3.85, val_loss 4.25" in text
    assert "beta-20260101-000002: loss 4.85, val_loss 5.25" in text
    assert "accuracy" not in text  # another family's values are in its own plot
    assert "more" not in text  # nothing cut at this size
    # the box lies inside the data area
    ok, area, box = inside(loss)
    assert ok, (area, box)

    # the accuracy plot lists accuracy only; the loss plot's readout is gone
    hover(accuracy, 5)
    assert shown(accuracy) and not shown(loss)
    text = plain(accuracy)
    assert "alpha-20260101-000001: accuracy 0.55" in text
    assert re.search(r"\bloss\b", text) is None
    assert sum(shown(p) for p in four_runs.plots.values()) == 1


def test_the_readout_stays_inside_a_low_plot_and_counts_what_it_left_out(four_runs, window):
    loss = four_runs.plots["loss"]
    window.resize(900, 560)
    QApplication.processEvents()
    for x in (1, 10, 19.5):  # left edge, middle, right edge: the box beside the cursor
        hover(loss, x)
        ok, area, box = inside(loss)
        assert ok, (x, area, box)
    assert "more" not in plain(loss)  # 6 rows fit a plot of the least height
    loss.widget.setMinimumHeight(0)
    loss.widget.setFixedHeight(150)  # lower than any plot the window makes: rows must go
    QApplication.processEvents()
    hover(loss, 19.5)
    ok, area, box = inside(loss)
    assert ok, (area, box)
    lines = plain(loss).splitlines()
    assert lines[0] == "step 20" and 2 <= len(lines) < 7
    kept = len(lines) - 2  # the head, the rows kept, then how many more there are
    assert lines[-1] == f"… {6 - kept} more"


def test_leaving_the_plot_hides_its_readout(four_runs):
    loss = four_runs.plots["loss"]
    hover(loss, 12)
    assert shown(loss)
    loss.widget.scene().sigMouseMoved.emit(QPointF(-50, -50))
    assert not shown(loss) and not loss._crosshair.isVisible()
    hover(loss, 12)
    loss.widget.leaveEvent(QEvent(QEvent.Type.Leave))  # what Qt sends when the mouse leaves
    assert not shown(loss)


def test_step_within_fit_readout_keeps_to_the_family(four_runs):
    four_runs.set_x_mode(PER_FIT)
    loss = four_runs.plots["loss"]
    text = loss.readout(5)
    assert "alpha-20260101-000001 fit 1: loss 3.95" in text.replace("<b>", "").replace("</b>", "")
    assert "accuracy" not in text


def test_a_run_picked_while_its_folder_is_read_joins_every_legend(four_runs, tmp_path, qtbot):
    window = four_runs.window()
    recorded(tmp_path, "gamma-20260101-000003", 6.0, "/tmp/gamma.py", 4.0)
    window.runs.refresh_list()
    window.runs.select(["alpha-20260101-000001", "gamma-20260101-000003"])
    window.bridge.flush()  # drawn while gamma is still being read: no line of it yet
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=30_000)
    window.runs.poll()  # its points arrive
    window.bridge.flush()
    for family in ("loss", "accuracy"):
        plot = four_runs.plots[family]
        assert "gamma-20260101-000003" in plot.legend_labels(), (family, plot.legend_labels())
