"""The run store: one model of a run, filled by live events or a recorded folder."""

from __future__ import annotations

import json
import math
import time

import numpy as np

from tests.core.tfevents import write_events
from tfstudio.core.events import (
    CheckpointRestored,
    EpochEnded,
    FitStarted,
    LearningRate,
    ModelSummary,
    NonFinite,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.core.run_loading import FolderFeed, FolderLoader, load_folder, tag_kind
from tfstudio.core.run_store import EPOCH, RUNNING, SAMPLED, STEP, RunStore
from tfstudio.core.smoothing import ema


def fit(index: int, start: int, name: str = "m", spe: int = 1) -> FitStarted:
    model = ModelSummary(name, "Sequential", (), 10, 10)
    return FitStarted(index, model, 1, 0, None, spe, start, 0.0)


def step(f: int, g: int, values: dict, running: dict | None = None) -> StepEnded:
    return StepEnded(f, g, 0, g, 1, values, values if running is None else running, g * 0.01)


def test_steps_epochs_lr_marks_and_segments_go_where_views_read_them():
    store = RunStore("run")
    store.add([RunStarted("/p/s.py", ("s.py",), "/p", 0.0), fit(0, 0)])
    store.add([step(0, g, {"loss": 1.0 / g, "acc": 0.1 * g}) for g in range(1, 6)])
    store.add([EpochEnded(0, 0, 5, {"loss": 0.4, "val_loss": 0.5}, 0.1)])
    store.add([LearningRate(5, 0.01, False), NonFinite(5, math.nan, "", "", "", "", "pause")])
    store.add([fit(1, 5, "m2"), step(1, 6, {"loss": 2.0}), step(1, 7, {"loss": 1.0})])
    store.add([CheckpointRestored("/c/ckpt-1", 7, 1)])  # at the step it is at: nothing dropped
    assert store.families() == ["loss", "acc", "learning_rate"]
    x, y = store.steps["loss"].points()
    assert x.tolist() == [1, 2, 3, 4, 5, 6, 7] and y[-1] == 1.0
    assert store.steps["loss"].breaks == [5.5]  # no line from fit 1 into fit 2
    assert store.epochs["val_loss"].ys == [0.5] and store.epoch_steps == [5.0]
    assert store.steps["learning_rate"].kind == SAMPLED
    assert [m.text for m in store.marks] == ["NaN/Inf loss at step 5", "restored step 7"]
    assert [(f.fit_index, s, e) for f, s, e in store.spans()] == [(0, 0.0, 5.0), (1, 5.0, math.inf)]
    assert store.fit_steps == {0: 5, 1: 7} and store.fit_loss[1] == 1.0
    assert store.global_step == 7


def test_a_learning_rate_sent_once_holds_to_the_newest_step_and_back_after_a_restore():
    store = RunStore()
    store.add([fit(0, 0), LearningRate(0, 0.01, False)])
    rate = store.steps["learning_rate"]
    assert rate.held_to == 0.0
    store.add([step(0, g, {"loss": 1.0}) for g in range(1, 41)])
    assert rate.held_to == 40.0 and rate.points()[1].tolist() == [0.01]  # no made-up point
    seen = rate.revision
    store.add([step(0, 41, {"loss": 1.0})])
    assert rate.held_to == 41.0 and rate.revision > seen  # views redraw the held line
    store.truncate(20.5)  # a checkpoint of step 20 restored
    assert rate.held_to == 20.0
    assert store.steps["loss"].held_to is None  # per-step values hold nothing


def test_a_key_absent_for_a_while_is_cut_and_running_means_give_way_to_values():
    store = RunStore()
    store.add([fit(0, 0)])
    store.add(
        [step(0, g, {"loss": 1.0} if g not in (3, 4) else {}, {"auc": 0.5}) for g in range(1, 7)]
    )
    assert store.steps["loss"].breaks == [3.5]  # one cut between 2 and 5
    assert "auc" in store.running
    store.add([step(0, 7, {"loss": 1.0, "auc": 0.6})])
    assert "auc" in store.steps and "auc" not in store.running


def test_smoothed_twin_is_the_debiased_ema_restarted_at_each_segment_and_resmoothed():
    store = RunStore(smoothing=0.6)
    store.add([fit(0, 0)])
    first = [float(v) for v in np.random.default_rng(0).normal(size=30)]
    store.add([step(0, g, {"loss": first[g - 1]}) for g in range(1, 31)])
    store.add([fit(1, 30)])
    second = [5.0 + v for v in first]
    store.add([step(1, 30 + g, {"loss": second[g - 1]}) for g in range(1, 31)])
    twin = store.steps["loss"].smooth
    _, y = twin.series.view()
    np.testing.assert_allclose(y, ema(first, 0.6) + ema(second, 0.6), rtol=1e-12)
    store.set_smoothing(0.9)
    _, y = store.steps["loss"].smooth.series.view()
    np.testing.assert_allclose(y, ema(first, 0.9) + ema(second, 0.9), rtol=1e-12)
    store.steps["loss"].suspend_smoothing()  # no view shows it: no work
    store.add([step(1, 61, {"loss": 1.0})])
    assert not store.steps["loss"].smooth.series.count
    store.steps["loss"].resume_smoothing()
    assert store.steps["loss"].smooth.series.count == 61


def test_memory_stays_bounded_however_long_the_run():
    store = RunStore(capacity=1000)
    store.add([fit(0, 0)])
    for start in range(0, 200_000, 10_000):
        store.add([step(0, g, {"loss": 1.0}) for g in range(start + 1, start + 10_001)])
    assert store.steps["loss"].count() == 200_000
    assert store.nbytes() < 200_000  # a few buckets' worth, not 200k points


def test_tags_map_to_the_live_keys():
    assert tag_kind("step/loss") == ("loss", STEP)
    assert tag_kind("epoch/val_accuracy") == ("val_accuracy", EPOCH)
    assert tag_kind("learning_rate") == ("learning_rate", SAMPLED)
    assert tag_kind("train/epoch_loss") == ("loss", EPOCH)
    assert tag_kind("validation/epoch_loss") == ("val_loss", EPOCH)
    assert tag_kind("train/batch_loss") == ("loss", STEP)
    assert tag_kind("train/epoch_learning_rate") == ("learning_rate", SAMPLED)
    assert tag_kind("weights/seq/dense/kernel/mean") is None
    assert tag_kind("running/auc") == ("auc", RUNNING)
    assert tag_kind("my_metric") == ("my_metric", STEP)


def recorded_folder(tmp_path, steps: int = 20):
    run = tmp_path / "run-1"
    write_events(
        run,
        {
            "step/loss": [(g, 1.0 / g) for g in range(1, steps + 1)],
            "epoch/loss": [(steps // 2, 0.5), (steps, 0.25)],
            "epoch/val_loss": [(steps // 2, 0.6), (steps, 0.3)],
        },
    )
    info = {
        "status": "finished",
        "script": "/p/s.py",
        "start_time": time.time(),
        "segments": [
            {"kind": "fit", "index": 0, "model": "m", "class": "Sequential", "start_step": 0},
            {"kind": "fit", "index": 1, "model": "m2", "start_step": steps // 2},
        ],
        "steps": steps,
        "duration": 3.0,
    }
    (run / "run.json").write_text(json.dumps(info))
    return run


def test_a_recorded_folder_fills_a_store_the_live_way(tmp_path):
    store = load_folder(recorded_folder(tmp_path))
    assert [f.model.name for f in store.fits] == ["m", "m2"]
    assert store.fits[0].model.class_name == "Sequential"
    x, y = store.steps["loss"].points()
    assert x.tolist() == list(range(1, 21))
    np.testing.assert_allclose(y, [np.float32(1.0 / g) for g in range(1, 21)])
    assert store.steps["loss"].breaks == [10.5]
    assert store.epochs["val_loss"].ys == [np.float32(0.6), np.float32(0.3)]
    assert store.epoch_steps == [10.0, 20.0]
    assert isinstance(store.ended, RunEnded) and store.ended.status == "finished"


def test_the_loader_reads_on_its_own_thread_and_follows_only_what_was_appended(tmp_path):
    run = recorded_folder(tmp_path)
    feed = FolderFeed(run)
    store = RunStore("run")
    loader = FolderLoader()
    try:
        loader.submit(feed)
        deadline = time.monotonic() + 30
        done = []
        while not done and time.monotonic() < deadline:
            done = loader.take()
            time.sleep(0.01)
        [(got, batch)] = done
        assert got is feed
        batch.apply(store)
        assert store.steps["loss"].count() == 20
        write_events(run, {"step/loss": [(21, 0.01), (22, 0.02)]})
        loader.submit(feed)
        done = []
        while not done and time.monotonic() < deadline:
            done = loader.take()
            time.sleep(0.01)
        done[0][1].apply(store)
        assert store.steps["loss"].count() == 22  # only the two new points came
    finally:
        loader.close()


def test_a_restore_makes_every_view_forget_what_came_after_its_step():
    from tfstudio.core.events import (
        CheckpointRestored,
        GradientStats,
        GradientVariable,
        VariableStats,
        WeightStats,
    )

    def weights(s):
        v = VariableStats("m/k", (2,), 0.0, 1.0, -1.0, 1.0, 1.0, 0.0, (1, 1))
        return WeightStats(0, s, (v,))

    store = RunStore(smoothing=0.5)
    store.add([fit(0, 0)])
    for g in range(1, 31):
        store.add([step(0, g, {"loss": 1.0 / g})])
        if g % 10 == 0:
            store.add([EpochEnded(0, g // 10 - 1, g, {"loss": 0.1, "val_loss": 0.2}, g * 0.01)])
        if g % 10 == 5:
            store.add(
                [weights(g), GradientStats(0, g, 1.0, (GradientVariable("m/k", 1, 0, 1, ()),))]
            )
    store.add([CheckpointRestored("/c/ckpt-1", 12, 12, 1.0)])
    x, _ = store.steps["loss"].points()
    assert x.tolist() == list(range(1, 13))
    assert store.epochs["val_loss"].xs == [10.0] and store.epoch_steps == [10.0]
    assert store.inspector.weights["m/k"].steps == [5]
    assert store.inspector.global_norm.steps == [5]
    assert store.fit_steps[0] == 12 and store.global_step == 12
    assert [m.text for m in store.marks] == ["restored step 12"]
    store.add([step(0, g, {"loss": 2.0}) for g in range(13, 21)])  # the run goes on from 12
    x, y = store.steps["loss"].points()
    assert x.tolist() == list(range(1, 21)) and y[-1] == 2.0
    _, smoothed = store.steps["loss"].smooth.series.view()
    raw = [1.0 / g for g in range(1, 13)] + [2.0] * 8
    np.testing.assert_allclose(smoothed, ema(raw, 0.5), rtol=1e-12)  # no trace of 13..30


def test_steps_going_back_in_a_folder_cut_the_line_where_they_resume():
    store = RunStore()
    store.add([fit(0, 0)])
    xs = np.array([1, 2, 3, 4, 5, 3, 4], dtype=float)  # a restore to step 2, recorded
    store.add_columns("loss", xs, np.array([5, 4, 3, 2, 1, 9, 8], dtype=float))
    x, y = store.steps["loss"].points()
    assert x.tolist() == [1, 2, 3, 4] and y.tolist() == [5, 4, 9, 8]


def test_series_truncate_keeps_count_and_points_consistent():
    from tfstudio.core.series import Series

    s = Series(capacity=8)
    s.extend(list(range(1, 21)), [float(v) for v in range(1, 21)])  # decimated: width 4
    s.truncate(9)
    x, _ = s.view()
    assert x.max() < 9 and s.count == len(x) // 2 * s.width
    s.extend([9.0, 10.0], [0.0, 0.0])
    assert s.view()[0][-1] == 10.0
