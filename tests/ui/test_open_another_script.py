"""Opening another script after a run shows that script's empty state (issue 52).

After a finished run and after a failed one alike: the plots hold none of the last
run (the new script's own previous run is drawn faint behind, when it has one), the
status bar has no epoch, step, speed or loss, the Notices hold only what reading the
new script found, the Checkpoints dock lists nothing, the inspector has no samples.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from tests.ui.test_runs_in_metrics import recorded
from tfstudio.core.events import Advice, CheckpointSaved, ExecutionMode, LearningRate, RunState
from tfstudio.ui.panels.checkpoints import NO_CHECKPOINT

B_LOSSES = [3.0 - 0.1 * i for i in range(20)]


def _scripts(tmp_path):
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text("print('a')\n")
    b.write_text("print('b')\n")
    return a, b


def _run_a(window, run, a, how: str, script_error) -> None:
    """A run of ``a`` with plots, a live notice and a checkpoint, ended ``how``."""
    assert window.open_script(str(a)) and window.run_script()
    run.frame()  # the RunStarted the launcher queued
    run.fit(epochs=2, steps_per_epoch=10).steps(10, epoch=0).epoch_end(0, loss=0.2)
    run.steps(4, epoch=1)
    run.emit(
        Advice("divergence", "The loss diverged", "It went up.", "lower the rate", str(a), 1),
        CheckpointSaved(str(a.parent / "ck" / "ckpt-10"), 10, 0.1, 0.3, 1.0),
        RunState("paused", 14, "non-finite loss"),
        ExecutionMode(False, 2, 1),
        LearningRate(1, 0.003, False),
    )
    if how == "finished":
        run.steps(6, epoch=1, start=4).epoch_end(1, loss=0.1).fit_end().ended().frame()
    else:
        run.ended("failed", 1, error=script_error(str(a), 3)).frame()
    assert window.metrics.plots and window.notices.notices()
    assert "epoch 2/2" in window.status.summary()
    assert window.checkpoints.paths()
    window.control.refresh()
    assert window.control.mode_label.text() == "graph · traced 2×"
    assert window.control.lr_label.text() == "0.003"


def _state(window) -> dict:
    """What the window shows, as values the two cases can be compared by."""
    metrics = window.metrics
    layers = [(layer.name, layer.faint) for layer in metrics.compared]
    return {
        "title": window.windowTitle(),
        "state": window.status.state_text(),
        "status": window.status.summary(),
        "bar": window.status.progress_bar.isVisibleTo(window.status),
        "live steps": metrics.store.global_step,
        "live fits": len(metrics.store.fits),
        "live epochs": list(metrics.store.epoch_steps),
        "live lines": sorted(
            key for plot in metrics.plots.values() for key in plot.steps if plot.steps[key].count()
        ),
        "layers": layers,
        "notices": [n.title for n in window.notices.notices()],
        "checkpoints": window.checkpoints.paths(),
        "checkpoint message": window.checkpoints.message.text(),
        "inspector": window.inspector.store.ended or bool(window.inspector.store.trees),
        "mode": window.control.mode_label.text(),  # the toolbar: none of a's trace count or rate
        "rate": window.control.lr_label.text(),
        "system": "no run yet" in window.system.figures.text(),
    }


@pytest.mark.parametrize("how", ["finished", "failed"])
def test_opening_another_script_after_a_run_shows_its_empty_state(
    window, run, qtbot, tmp_path, script_error, how
):
    a, b = _scripts(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    recorded(runs, "b-20260101-000000", B_LOSSES, script=str(b.resolve()), started=1.0)
    window.run_options = dataclasses.replace(window.run_options, logdir=str(runs))
    _run_a(window, run, a, how, script_error)

    assert window.open_script(str(b))
    qtbot.waitUntil(lambda: not window.runs.loading() and window.runs.loader.idle(), timeout=30_000)
    window.runs.poll()
    window.bridge.flush()
    state = _state(window)
    assert state == {
        "title": "b.py — tfstudio",
        "state": "idle",
        "status": "idle",  # no epoch, step, speed, ETA or loss of a's run
        "bar": False,
        "live steps": 0,
        "live fits": 0,
        "live epochs": [],
        "live lines": [],
        "layers": [("previous run", True)],  # b's own previous run, faint
        "notices": [],  # b reads clean; a's live notice is gone
        "checkpoints": [],
        "checkpoint message": NO_CHECKPOINT,
        "inspector": False,
        "mode": "graph",
        "rate": "",
        "system": True,
    }
    plot = window.metrics.plots["loss"]
    [layer] = plot.layers
    qtbot.waitUntil(lambda: "loss" in layer.curves, timeout=10_000)

    def drawn() -> list[float]:
        x, _ = layer.curves["loss"].item.getData()
        return [float(v) for v in x if not math.isnan(v)]

    qtbot.waitUntil(lambda: drawn()[-1:] == [20.0], timeout=10_000)  # b's run, all of it
    # fitted, not the head-room a growing run gets (its 20 steps on an axis to 50)
    qtbot.waitUntil(lambda: plot.vb.viewRange()[0][1] < 22.0, timeout=10_000)
    assert window.metrics.previous_box.isVisible()
    assert window.run_action.isEnabled()


def test_opening_a_script_with_no_previous_run_shows_the_placeholder(
    window, run, tmp_path, script_error
):
    a, b = _scripts(tmp_path)
    window.run_options = dataclasses.replace(window.run_options, logdir=str(tmp_path / "none"))
    _run_a(window, run, a, "failed", script_error)
    assert window.open_script(str(b))
    window.bridge.flush()
    assert window.metrics.plots == {}
    assert window.metrics.placeholder().startswith("b.py is open")
    assert not window.metrics.previous_box.isVisible()
    assert window.status.summary() == "idle"
