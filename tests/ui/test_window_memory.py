"""Run after run in one window: what each run leaves behind stays bounded (issue 19)."""

from __future__ import annotations

import gc
import json
import time

from PySide6.QtCore import QCoreApplication, QEvent

from tests.core.tfevents import write_events
from tests.ui.test_console import TF_STARTUP
from tfstudio.core.events import ConsoleOutput, RunStarted
from tfstudio.core.run_store import RunStore
from tfstudio.ui.panels.console import ConsolePanel

SCRIPT = "/tmp/train.py"
RUNS = 8


def recorded(logdir, name, started):
    """A finished run folder of ``SCRIPT`` (20 steps of loss), as tfstudio records."""
    path = logdir / name
    write_events(path, {"step/loss": [(g, 1.0 / g) for g in range(1, 21)]})
    info = {"status": "finished", "script": SCRIPT, "start_time": started, "steps": 20}
    (path / "run.json").write_text(json.dumps(info))
    return path


def live_run_stores():
    # the event loop deletes replaced plots (deleteLater): run that part of it now
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    return sum(isinstance(o, RunStore) for o in gc.get_objects())


def test_each_run_draws_its_previous_run_and_earlier_ones_are_let_go(window, run, qtbot, tmp_path):
    for i in range(RUNS):
        recorded(tmp_path, f"train-2026010{i}-000000", started=float(i + 1))
    window.runs.set_logdir(tmp_path)
    stores_after_first = None
    for i in range(RUNS):
        # the run after folder i: that folder is its previous run
        run.launcher.running = True
        run.emit(RunStarted(SCRIPT, ("train.py",), "/tmp", float(i) + 2.0))
        run.fit(epochs=1, steps_per_epoch=20).steps(20).frame()
        plot = window.metrics.plots["loss"]
        [layer] = plot.layers  # the previous run, faint behind the live one
        assert layer.faint and layer.name == "previous run"
        assert layer.store.name == f"train-2026010{i}-000000"
        qtbot.waitUntil(
            lambda store=layer.store: bool(window.runs.poll()) or "loss" in store.steps,
            timeout=30_000,
        )
        run.frame()
        assert list(window.runs.pinned) == [tmp_path / f"train-2026010{i}-000000"]
        run.ended().frame()
        if stores_after_first is None:
            stores_after_first = live_run_stores()
    # the live store and the previous run's: no store of an earlier run is kept
    assert live_run_stores() <= stores_after_first
    assert len(window.runs.pinned) == 1
    assert len(window.runs._progress) <= 1  # reading progress of the runs still read


def test_the_console_keeps_only_the_start_up_folds_it_can_still_show(qtbot):
    from tfstudio.core.events import RunEnded

    console = ConsolePanel(max_lines=12)
    qtbot.addWidget(console)
    for i in range(30):
        for chunk in TF_STARTUP:
            console.ingest_event(ConsoleOutput("stderr", chunk, native=True))
        console.ingest_event(RunStarted(SCRIPT, ("train.py",), "/tmp", time.time()))
        console.ingest_event(ConsoleOutput("stdout", f"run {i} output\n"))
        console.ingest_event(RunEnded("finished", 0, 0, 0, 0.1, None, ""))
        console.refresh()
    # each run writes four lines: three runs' lines fit in twelve, so at most four folds
    assert len(console.folds) <= 4
    assert "run 29 output" in console.text()
    [last, *_] = reversed(console.startup_folds())
    console.toggle_fold(last)  # the newest fold still opens under its line
    assert "cudart_stub" in console.text()
