"""One run's events, taken live and read back from its recorded folder, give the same store
and the same plots (the recorder writes what the store reads; the views cannot tell)."""

from __future__ import annotations

import numpy as np
import pytest

from tfstudio.core.channel import Channel
from tfstudio.core.events import (
    CheckpointRestored,
    EpochEnded,
    FitEnded,
    FitStarted,
    LearningRate,
    ModelSummary,
    RunEnded,
    RunStarted,
    StepColumns,
    StepEnded,
)
from tfstudio.core.run_loading import load_folder
from tfstudio.core.run_store import RunStore
from tfstudio.ui.panels.metric_plot import PER_FIT
from tfstudio.ui.panels.metrics import MetricsPanel

pytestmark = pytest.mark.tf  # the recorder writes through TensorFlow's record writer


def f32(v: float) -> float:
    """Values the recorder keeps exactly (it writes float32, as tf.summary does)."""
    return float(np.float32(v))


def run_events() -> list[object]:
    """Two segments (a fit, then a loop), with a checkpoint restored half way through
    the fit's second epoch; the clock only goes forward, as a run's does."""
    rng = np.random.default_rng(3)
    events: list[object] = [RunStarted("/p/train.py", ("train.py",), "/p", 1_700_000_000.0)]
    g, t = 0, 0.0
    for fit, (name, kind, loop) in enumerate((("mlp", "fit", 0), ("gan", "loop", 1))):
        model = ModelSummary(name, "Sequential", (), 10, 10)
        events.append(FitStarted(fit, model, 2, 0, 30, 1, g, t, kind, loop))
        for epoch in range(2):
            for i in range(30):
                g, t = g + 1, t + 0.01
                values = {"loss": f32(2.0 / g + rng.normal() * 0.1), "acc": f32(g / 200)}
                events.append(StepEnded(fit, g, epoch, i + 1, 1, values, values, t))
                if kind == "fit" and epoch == 1 and i == 20:
                    t += 0.01
                    events.append(CheckpointRestored("/c/ckpt-1", 25, 25, t))  # back to 25
                    g = 25
            events.append(LearningRate(g, f32(0.01 / (epoch + 1)), False))
            if kind == "fit":
                metrics = {"loss": f32(1.0 / g), "val_loss": f32(1.2 / g), "acc": f32(g / 210)}
                events.append(EpochEnded(fit, epoch, g, metrics, t))
        events.append(FitEnded(fit, g, False, t))
    events.append(RunEnded("finished", 0, 1, g, t, loops=1))
    return events


def same_tracks(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        xa, ya = a[key].points()
        xb, yb = b[key].points()
        np.testing.assert_array_equal(xa, xb, err_msg=key)
        np.testing.assert_array_equal(ya, yb, err_msg=key)
        assert a[key].breaks == b[key].breaks, key


def beats(events: list[object], every: int = 7) -> list[list[object]]:
    """``events`` as a worker's pump hands them to the recorder: steps as blocks of
    columns, a batch every ``every`` events (an epoch's end or a learning rate arrives
    while steps wait to be encoded)."""
    out = []
    for start in range(0, len(events), every):
        channel = Channel()
        for e in events[start : start + every]:
            if type(e) is StepEnded:
                channel.step(
                    e.fit_index,
                    e.global_step,
                    e.epoch,
                    e.step,
                    e.steps,
                    e.values,
                    e.running,
                    e.time,
                )
            else:
                channel.emit(e)
        out.append(channel.drain())
    return out


@pytest.mark.parametrize("as_columns", [False, True])
def test_live_and_recorded_stores_hold_the_same_run_and_draw_the_same_plots(
    qtbot, tmp_path, as_columns
):
    from tfstudio.engine.recorder import Recorder

    events = run_events()
    live = RunStore("live", smoothing=0.6)
    live.add(events)
    recorder = Recorder(tmp_path / "run")
    if as_columns:
        recorder.flush_every = 1e9  # steps wait for the end: epochs and rates pass them
        batches = beats(events[:-1])
        assert any(type(e) is StepColumns for e in batches[0])
        for batch in batches:
            recorder.write(batch)
    else:
        recorder.write(events[:-1])
    recorder.close(events[-1])
    recorded = load_folder(tmp_path / "run")
    recorded.set_smoothing(0.6)

    assert [
        (f.fit_index, f.global_step, f.kind, f.loop_index, f.model.name) for f in live.fits
    ] == [(f.fit_index, f.global_step, f.kind, f.loop_index, f.model.name) for f in recorded.fits]
    assert [f.title() for f in live.fits] == [f.title() for f in recorded.fits]
    same_tracks(live.steps, recorded.steps)  # per-step values and the learning rate
    same_tracks(live.epochs, recorded.epochs)
    assert live.epoch_steps == recorded.epoch_steps
    assert live.breaks == recorded.breaks
    assert live.fit_steps == recorded.fit_steps and live.fit_loss == recorded.fit_loss
    assert live.families() == recorded.families()
    assert [m.text for m in live.marks] == [m.text for m in recorded.marks] == ["restored step 25"]
    # the restore's rule: the stretch it abandoned (steps 26..51 before it) is gone in both
    x, _ = live.steps["loss"].points()
    assert np.all(np.diff(x) > 0) and x.tolist() == list(range(1, len(x) + 1))
    # smoothed twins: the live store smooths frame by frame, the folder's in one go, so
    # they agree to float rounding
    for key in live.steps:
        if live.steps[key].smooth is not None:
            np.testing.assert_allclose(
                live.steps[key].smooth.series.view()[1],
                recorded.steps[key].smooth.series.view()[1],
                rtol=1e-12,
            )

    panels = []
    for store in (live, recorded):
        panel = MetricsPanel()
        qtbot.addWidget(panel)
        panel.resize(900, 700)
        panel.show()
        panel.set_smoothing(0.6)
        panel.show_store(store)
        panel.refresh()
        panels.append(panel)
    a, b = panels
    assert list(a.plots) == list(b.plots)
    for mode in ("global", PER_FIT):
        a.set_x_mode(mode)
        b.set_x_mode(mode)
        for family in a.plots:
            pa, pb = a.plots[family], b.plots[family]
            assert pa.fit_marker_labels() == pb.fit_marker_labels()
            assert pa.legend_labels() == pb.legend_labels()
            items_a = [i for i in pa.items if i.isVisible()]
            items_b = [i for i in pb.items if i.isVisible()]
            assert len(items_a) == len(items_b) > 0
            for ia, ib in zip(items_a, items_b, strict=True):
                np.testing.assert_array_equal(ia.xData, ib.xData)
                np.testing.assert_allclose(ia.yData, ib.yData, rtol=1e-12)
