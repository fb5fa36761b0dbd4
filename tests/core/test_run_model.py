"""The run model: one entry point fills every part a run shows; the session owns the models."""

from __future__ import annotations

import numpy as np

from tfstudio.core.events import (
    CheckpointDeleted,
    CheckpointList,
    CheckpointRestored,
    CheckpointSaved,
    ConsoleOutput,
    EpochEnded,
    FitEnded,
    FitStarted,
    GradientStats,
    GradientVariable,
    ModelSummary,
    Notice,
    RunEnded,
    RunRecording,
    RunStarted,
    StepEnded,
    SystemSampled,
    VariableStats,
    WeightStats,
)
from tfstudio.core.run_model import PARTS, ConsoleText, RunModel, Session

START = RunStarted("/p/train.py", ("train.py",), "/p", 1_700_000_000.0)


def fit(index: int = 0, start: int = 0) -> FitStarted:
    return FitStarted(index, ModelSummary("m", "Sequential", (), 10, 10), 2, 0, 5, 1, start, 0.0)


def step(g: int, loss: float) -> StepEnded:
    return StepEnded(0, g, (g - 1) // 5, (g - 1) % 5 + 1, 1, {"loss": loss}, {"loss": loss}, g)


def weights(g: int) -> WeightStats:
    v = VariableStats("m/d/kernel", (3, 1), 0.1 * g, 1.0, -1.0, 1.0, 2.0, 0.0, (1, 2, 1))
    return WeightStats(0, g, (v,))


def saved(g: int) -> CheckpointSaved:
    return CheckpointSaved(f"/c/ckpt-{g}", g, g * 0.5, 1.0 / g, 1e9 + g, 0.01, True)


def a_run() -> list[object]:
    return [
        START,
        RunRecording("/runs/train-1"),
        ConsoleOutput("stderr", "TF start-up line\n", native=True),
        ConsoleOutput("tfstudio", "a note of the window's\n"),
        fit(),
        *[step(g, 1.0 / g) for g in range(1, 6)],
        weights(5),
        GradientStats(0, 5, 0.5, (GradientVariable("m/d/kernel", 0.5, -0.1, 0.1, (2, 2)),)),
        ConsoleOutput("stdout", "epoch 1\n"),
        EpochEnded(0, 0, 5, {"loss": 0.5, "val_loss": 0.6}, 5.0),
        saved(5),
        Notice("retracing", "traced 6 times"),
        SystemSampled(1.0, 5, {"process/cpu_percent": 99.0, "process/rss_bytes": 1e8}),
        *[step(g, 1.0 / g) for g in range(6, 11)],
        weights(10),
        SystemSampled(2.0, 10, {"process/cpu_percent": 101.0, "process/rss_bytes": 1.1e8}),
        EpochEnded(0, 1, 10, {"loss": 0.2, "val_loss": 0.3}, 10.0),
        FitEnded(0, 10, False, 10.0),
        RunEnded("finished", 0, 1, 10, 10.0),
    ]


def test_one_entry_point_fills_every_part_and_moves_its_revision():
    model = RunModel(live=True)
    before = {part: model.revision(part) for part in PARTS}
    model.apply(a_run())
    assert all(model.revision(p) != before[p] for p in PARTS if p != "hparams"), {
        p: (before[p], model.revision(p)) for p in PARTS
    }
    assert model.path == "/runs/train-1"
    # metrics and progress
    x, y = model.metrics.steps["loss"].points()
    assert x.tolist() == list(range(1, 11)) and y[-1] == 0.1
    assert model.metrics.epochs["val_loss"].ys == [0.6, 0.3]
    assert model.progress.global_step == 10 and model.progress.ended
    assert model.progress.epoch == 2 and model.progress.loss == 0.1
    # the inspector's samples live in the model (the metrics store's inspector part)
    assert model.inspector is model.metrics.inspector
    assert model.inspector.weights["m/d/kernel"].steps == [5, 10]
    assert model.inspector.global_norm.steps == [5] and model.inspector.ended
    assert model.inspector.kinds == {0: "fit 1"}
    # the console: the script's output in order, the window's own notes left out
    assert model.console.text() == "TF start-up line\nepoch 1\n"
    assert [c[0] for c in model.console.chunks] == ["stderr", "stdout"]
    # system samples, checkpoints, notices
    t, cpu = model.system.arrays("system/process/cpu_percent")
    assert t.tolist() == [1.0, 2.0] and cpu.tolist() == [99.0, 101.0]
    assert model.checkpoints == [saved(5)]
    assert model.notices == [Notice("retracing", "traced 6 times")]


def test_a_restore_drops_what_came_after_its_step_in_metrics_and_inspector_alike():
    model = RunModel()
    model.apply([START, fit(), *[step(g, 1.0) for g in range(1, 8)], weights(3), weights(7)])
    model.apply([CheckpointRestored("/c/ckpt-3", 3, 3)])
    assert model.metrics.steps["loss"].points()[0].tolist() == [1, 2, 3]
    assert model.inspector.weights["m/d/kernel"].steps == [3]
    assert model.progress.global_step == 3


def test_checkpoints_listed_and_deleted_follow_the_run_folder():
    model = RunModel()
    model.apply([START, CheckpointList("/c", (saved(6), saved(3))), saved(9)])
    assert [c.step for c in model.checkpoints] == [3, 6, 9]
    revision = model.revision("checkpoints")
    model.apply([CheckpointDeleted("/c/ckpt-3")])
    assert [c.step for c in model.checkpoints] == [6, 9]
    assert model.revision("checkpoints") == revision + 1
    model.apply([CheckpointDeleted("/c/ckpt-404")])  # nothing to drop: nothing moved
    assert model.revision("checkpoints") == revision + 1


def test_the_console_keeps_the_newest_text_within_its_bound_and_counts_the_rest():
    console = ConsoleText(max_chars=10)
    for i in range(6):
        console.add("stdout", f"line{i}\n")  # 6 chars each
    assert console.text() == "line5\n" and console.dropped == 30 and len(console) == 6
    assert console.added == 6
    assert console.since(4) == [("stdout", False, "line5\n")]  # line4 was dropped already
    assert console.since(6) == []


def test_a_new_run_starts_a_new_live_model_and_the_views_are_told():
    session = Session()
    told: list[RunModel] = []
    session.listeners.append(told.append)
    first = session.live
    session.apply([ConsoleOutput("stdout", "from before the run\n"), START, fit()])
    assert session.live is not first and session.shown is session.live and told == [session.live]
    # what the worker printed before its RunStarted (its start-up lines) is the run's
    assert session.live.console.text() == "from before the run\n"
    assert len(session.live.metrics.fits) == 1
    session.apply([RunEnded("finished", 0, 1, 0, 1.0), ConsoleOutput("stderr", "next\n"), START])
    assert session.live.console.text() == "next\n"


def test_a_session_opens_a_folder_once_and_shows_any_model(tmp_path):
    from tests.core.tfevents import write_events

    run = tmp_path / "train-1"
    run.mkdir()
    write_events(run, {"step/loss": [(g, 1.0 / g) for g in range(1, 4)]})
    session = Session()
    model = session.open(run)
    assert session.open(run) is model and model.name == "train-1"
    np.testing.assert_array_equal(model.metrics.steps["loss"].points()[0], [1, 2, 3])
    assert model.inspector.recorded_in == "train-1"
    session.show(model)
    assert session.shown is model
    session.close(run)
    assert session.shown is session.live


def test_a_folder_read_on_the_sessions_reader_thread_fills_the_model_as_a_read_here(tmp_path):
    """Session.open(wait=False): the model exists at once, loading; poll() applies the read
    made on the reader thread; every part equals the model read on this thread."""
    import time

    from tests.ui.test_shown_run_reading import write_big_run

    run = tmp_path / "big-1"
    write_big_run(run)
    here = Session().open(run)
    session = Session()
    model = session.open(run, wait=False)
    assert model.loading and model.inspector.loading and not model.inspector.weights
    deadline = time.monotonic() + 60
    while model.loading and time.monotonic() < deadline:
        session.poll()
        time.sleep(0.01)
    assert not model.loading and not model.inspector.loading and model.notes == []
    assert model.recorded_status == here.recorded_status == "finished"
    for name, history in here.inspector.weights.items():
        assert model.inspector.weights[name].steps == history.steps
        assert model.inspector.weights[name].hists == history.hists
    assert model.inspector.trees.keys() == here.inspector.trees.keys()
    assert model.inspector.ended and model.inspector.recorded_in == "big-1"
    np.testing.assert_array_equal(
        model.metrics.steps["loss"].points()[1], here.metrics.steps["loss"].points()[1]
    )
    assert model.console.text() == here.console.text()
    assert model.system.series == here.system.series and model.hparams == here.hparams
    # a read again (the run followed) with nothing new moves no part
    revisions = {part: model.revision(part) for part in PARTS}
    assert session.follow(model)
    while session.reading():
        session.poll()
        time.sleep(0.01)
    assert {part: model.revision(part) for part in PARTS} == revisions
    session.shutdown()


def test_a_followed_run_json_caught_half_rewritten_keeps_its_last_status(tmp_path):
    """A followed run whose run.json is read while another writer rewrites it in place
    (truncated, then written) stays "running" and shows "finished" once it is: a half
    file read as no status stopped the following for good."""
    import json

    from tfstudio.core.run_parts import PartsFeed

    info = {"status": "running", "updated": 4e9, "hparams": {"fit0.epochs": 2}}
    (tmp_path / "run.json").write_text(json.dumps(info))
    feed = PartsFeed(tmp_path)
    assert feed.read().status == "running"
    (tmp_path / "run.json").write_text(json.dumps(info)[:17])  # caught mid-write
    half = feed.read()
    assert half.status == "running"
    assert half.hparams == {"fit0.epochs": 2}
    (tmp_path / "run.json").write_text(json.dumps({**info, "status": "finished"}))
    assert feed.read().status == "finished"
