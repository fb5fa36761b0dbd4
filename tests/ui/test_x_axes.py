"""x axes of the metric plots: global step, step within fit, relative time, wall time, epoch.

Two runs at different speeds (issue 56: "two runs at different speeds cannot be
compared in time"): on the relative-time axis each run's points land at that run's
own times, on the wall-time axis at its clock times; switching axes keeps every
point; the readout at a time names each run's value at its own step there; a run
recorded to a folder lands where its live self did.
"""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest
from PySide6.QtCore import QSettings
from tensorboard.compat.proto import event_pb2

from tests.core.tfevents import masked_crc32c
from tfstudio.core.events import EpochEnded, FitStarted, ModelSummary, RunStarted, StepColumns
from tfstudio.core.run_loading import load_folder
from tfstudio.core.run_store import RunStore
from tfstudio.core.x_axes import AXES, EPOCH, GLOBAL, PER_FIT, RELATIVE, WALL
from tfstudio.ui.panels.metric_layers import RunLayer
from tfstudio.ui.panels.metrics import MetricsPanel

N = 10
START_A = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
START_B = START_A + 3600.0  # an hour later


def live_run(start: float, dt: float, base: float, name: str) -> RunStore:
    """A run of N steps, one every ``dt`` s from 0.5 s after its start, two epochs of 5."""
    store = RunStore(name)
    model = ModelSummary("m", "Sequential", (), 10, 10)
    store.add([RunStarted(f"/tmp/{name}.py", (name,), "/tmp", start)])
    store.add([FitStarted(0, model, 2, 0, 5, 1, 0, 0.5)])
    steps = np.arange(1, N + 1, dtype=np.int64)
    times = 0.5 + dt * steps
    loss = base + 0.01 * steps
    for lo in (0, 5):
        sl = slice(lo, lo + 5)
        store.add(
            [
                StepColumns(
                    0,
                    steps[sl],
                    np.full(5, lo // 5),
                    steps[sl] - lo,
                    np.ones(5, np.int64),
                    times[sl],
                    {"loss": loss[sl].astype(np.float64)},
                    {},
                ),
                EpochEnded(0, lo // 5, int(steps[sl][-1]), {"loss": 0.0}, float(times[sl][-1])),
            ]
        )
    return store


@pytest.fixture
def panel(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    p = MetricsPanel(settings=settings)
    p.set_smoothing(0.0)  # the raw values (a smoothed line reads its EMA)
    qtbot.addWidget(p)
    p.resize(1200, 700)
    p.show()
    return p


def two_runs(panel: MetricsPanel) -> tuple[RunStore, RunStore]:
    """Run A (0.1 s a step) on show, run B (0.5 s a step, an hour later) beside it."""
    a = live_run(START_A, 0.1, 1.0, "fast")
    b = live_run(START_B, 0.5, 2.0, "slow")
    panel.show_store(a)
    panel.set_compared([RunLayer(b, "slow", "#2ca02c")])
    panel.refresh()
    return a, b


def drawn(item) -> tuple[list[float], list[float]]:
    """The finite points an item draws (NaN break markers left out)."""
    if item.xData is None:
        return [], []
    x, y = item.xData, item.yData  # all it was given (getData: the part in view)
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep].tolist(), y[keep].tolist()


def lines(panel: MetricsPanel) -> tuple[object, object]:
    """The loss plot's per-step item of the run on show and of the compared run."""
    plot = panel.plots["loss"]
    own = plot.steps["loss"].item
    (layer,) = plot.layers
    other = layer.curves["loss"].item
    return own, other


def test_relative_time_puts_each_run_at_its_own_times(panel) -> None:
    two_runs(panel)
    panel.set_x_mode("relative")
    own, other = lines(panel)
    steps = np.arange(1, N + 1)
    assert drawn(own)[0] == pytest.approx((0.5 + 0.1 * steps).tolist(), abs=1e-12)
    assert drawn(other)[0] == pytest.approx((0.5 + 0.5 * steps).tolist(), abs=1e-12)
    assert drawn(own)[1] == pytest.approx((1.0 + 0.01 * steps).tolist())
    assert panel.plots["loss"].plot.getAxis("bottom").labelText == "relative time (s)"


def test_wall_time_uses_each_runs_clock_and_labels_times_of_day(panel) -> None:
    two_runs(panel)
    panel.set_x_mode("wall")
    own, other = lines(panel)
    steps = np.arange(1, N + 1)
    assert drawn(own)[0] == pytest.approx((START_A + 0.5 + 0.1 * steps).tolist(), abs=1e-6)
    assert drawn(other)[0] == pytest.approx((START_B + 0.5 + 0.5 * steps).tolist(), abs=1e-6)
    plot = panel.plots["loss"]
    (x0, x1), _ = plot.vb.viewRange()
    assert x0 <= START_A + 0.6 and x1 >= START_B + 5.5  # both runs in view
    axis = plot.plot.getAxis("bottom")
    assert axis.dates
    ticks = axis.tickValues(START_A, START_A + 60, 1000)
    texts = axis.tickStrings(ticks[0][1][:3], 1.0, ticks[0][0])
    assert all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in texts), texts


def test_switching_axes_keeps_every_point(panel) -> None:
    two_runs(panel)
    for axis in (*AXES, GLOBAL):
        panel.set_x_mode(axis)
        plot = panel.plots["loss"]
        if axis == PER_FIT:
            items = [i for i in plot.overlays.values() if i.isVisible()]
            layer_items = [i for i in plot.layers[0].overlays.values() if i.isVisible()]
            assert sum(len(drawn(i)[0]) for i in items) == N
            assert sum(len(drawn(i)[0]) for i in layer_items) == N
            continue
        own, other = lines(panel)
        assert own.isVisible() and other.isVisible()
        assert len(drawn(own)[0]) == N, axis
        assert len(drawn(other)[0]) == N, axis
    assert not panel.plots["loss"].plot.getAxis("bottom").dates


def test_epoch_axis_puts_each_epoch_end_at_its_number(panel) -> None:
    two_runs(panel)
    panel.set_x_mode("epoch")
    own, _ = lines(panel)
    assert drawn(own)[0] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0])
    assert panel.plots["loss"].epoch_lines.positions().tolist() == pytest.approx([1.0, 2.0])


def test_readout_names_each_runs_value_at_its_own_step(panel) -> None:
    two_runs(panel)
    panel.set_x_mode("relative")
    plot = panel.plots["loss"]
    # 1.0 s: the fast run's step 5 (0.5 + 0.1 * 5), the slow run's first step (0.5 + 0.5)
    text = plot.readout(1.0)
    assert "step 5" in text  # the run on show: 0.5 + 0.1 * 5 = 1.0 s
    assert "<b>1.05</b>" in text
    assert "slow (step 1): loss <b>2.01</b>" in text
    text = plot.readout(3.0)  # the fast run ended at 1.5 s: only the slow one, at step 5
    assert "loss (per step)" not in text
    assert "slow (step 5): loss <b>2.05</b>" in text
    assert "<b>3.0 s</b><br>" in text  # no step of the run on show: it is not there


def test_axis_is_remembered_and_takes_command_line_names(panel, qtbot, tmp_path) -> None:
    panel.set_x_mode("wall")
    assert panel.x_mode == WALL
    again = MetricsPanel(settings=panel.settings)
    qtbot.addWidget(again)
    assert again.x_mode == WALL
    assert again.x_mode_box.currentData() == WALL
    again.set_x_mode("fit-step")
    assert again.x_mode == PER_FIT
    again.set_x_mode("step")
    assert again.x_mode == GLOBAL
    with pytest.raises(ValueError, match="x axis must be one of"):
        again.set_x_mode("hours")
    assert [again.x_mode_box.itemData(i) for i in range(again.x_mode_box.count())] == list(AXES)
    assert RELATIVE in AXES and EPOCH in AXES


def write_folder(path, store_start: float, times: np.ndarray, loss: np.ndarray) -> None:
    """A run folder as the recorder writes one: step/loss with each point's wall time."""
    path.mkdir(parents=True)

    def frame(data: bytes) -> bytes:
        header = struct.pack("<Q", len(data))
        return (
            header
            + struct.pack("<I", masked_crc32c(header))
            + data
            + struct.pack("<I", masked_crc32c(data))
        )

    with open(path / "events.out.tfevents.1.test", "wb") as f:
        f.write(
            frame(
                event_pb2.Event(
                    wall_time=store_start, file_version="brain.Event:2"
                ).SerializeToString()
            )
        )

        def scalar(tag: str, step: int, wall: float, value: float) -> None:
            ev = event_pb2.Event(wall_time=wall, step=step)
            ev.summary.value.add(tag=tag, simple_value=value)
            f.write(frame(ev.SerializeToString()))

        # system samples (at the step training had reached, taken while the next ran) and
        # epoch values (written after validation, later than their step) come first:
        # neither says when a step ended
        scalar("system/process/cpu_percent", 0, store_start + 0.1, 50.0)
        scalar("system/process/cpu_percent", 3, store_start + float(times[2]) + 0.05, 60.0)
        scalar("epoch/val_loss", 5, store_start + float(times[4]) + 0.9, 1.5)
        for g, (t, v) in enumerate(zip(times, loss, strict=True), start=1):
            scalar("step/loss", g, store_start + float(t), float(v))
    info = {
        "status": "finished",
        "start_time": store_start,
        "steps": len(times),
        "segments": [
            {
                "kind": "fit",
                "index": 0,
                "model": "m",
                "start_step": 0,
                "start_time": 0.5,
                "epochs": 2,
                "steps_per_epoch": 5,
            }
        ],
    }
    (path / "run.json").write_text(json.dumps(info))


@pytest.mark.parametrize("axis", [RELATIVE, WALL])
def test_recorded_run_lands_where_it_did_live(panel, qtbot, tmp_path, axis) -> None:
    live = live_run(START_A, 0.1, 1.0, "fast")
    steps = np.arange(1, N + 1)
    write_folder(tmp_path / "fast-run", START_A, 0.5 + 0.1 * steps, 1.0 + 0.01 * steps)
    recorded = load_folder(tmp_path / "fast-run")
    other = MetricsPanel()
    qtbot.addWidget(other)
    other.resize(1200, 700)
    other.show()
    for p, store in ((panel, live), (other, recorded)):
        p.show_store(store)
        p.set_x_mode(axis)
        p.refresh()
    a = drawn(panel.plots["loss"].steps["loss"].item)
    b = drawn(other.plots["loss"].steps["loss"].item)
    assert a[0] == pytest.approx(b[0], abs=1e-4)  # float32-free: wall times are doubles
    assert a[1] == pytest.approx(b[1], rel=1e-6)


def test_a_pause_is_a_gap_on_time_axes_not_a_line(panel) -> None:
    """A validation between epochs (9 s without steps): no line across it in time; every
    point still drawn; on the step axis the steps stay joined."""
    store = RunStore("paused")
    model = ModelSummary("m", "Sequential", (), 10, 10)
    store.add([RunStarted("/tmp/p.py", ("p",), "/tmp", START_A)])
    store.add([FitStarted(0, model, 2, 0, 5, 1, 0, 0.0)])
    steps = np.arange(1, N + 1, dtype=np.int64)
    times = 0.1 * steps + np.where(steps > 5, 9.0, 0.0)
    block = StepColumns(
        0,
        steps,
        np.zeros(N, np.int64),
        steps,
        np.ones(N, np.int64),
        times,
        {"loss": np.linspace(1.0, 0.5, N)},
        {},
    )
    store.add([block])
    panel.show_store(store)
    panel.set_x_mode("relative")
    panel.refresh()
    item = panel.plots["loss"].steps["loss"].item
    x, y = item.xData, item.yData
    assert len(drawn(item)[0]) == N
    gap = np.nonzero(np.isnan(y))[0]
    assert (
        len(gap) == 1
        and x[gap[0] - 1] == pytest.approx(0.5)
        and x[gap[0] + 1] == pytest.approx(9.6)
    )
    panel.set_x_mode("step")
    panel.refresh()
    assert not np.isnan(panel.plots["loss"].steps["loss"].item.yData).any()


def test_an_earlier_run_coming_in_widens_the_wall_time_range(panel) -> None:
    late = live_run(START_B, 0.5, 2.0, "slow")
    panel.show_store(late)
    panel.set_x_mode("wall")
    panel.refresh()
    panel.set_compared([RunLayer(live_run(START_A, 0.1, 1.0, "fast"), "fast", "#2ca02c")])
    panel.refresh()
    (x0, x1), _ = panel.plots["loss"].vb.viewRange()
    assert x0 <= START_A + 0.6 and x1 >= START_B + 5.5
