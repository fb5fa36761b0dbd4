"""A big recorded run appears coarse first (an overview of its whole length), then sharpens."""

from __future__ import annotations

import threading

import numpy as np

from tests.ui.test_runs_loading import big_run
from tfstudio.core.run_loading import load_folder

STEPS = 150_000


def test_a_big_run_shows_its_whole_length_at_once_then_the_full_read(
    window, qtbot, tmp_path, monkeypatch
):
    from tfstudio.core import run_loading

    run = tmp_path / "big-20260101-000000"
    big_run(run, STEPS)
    panel = window.runs
    panel.feeds_chunk_bytes = 1 << 18  # 256 KB a read: the run comes in many pieces
    read, apply = run_loading.FolderFeed.read, run_loading.FeedBatch.apply
    release = threading.Event()
    batches: list[tuple[int, int, int]] = []  # each applied batch's lowest and highest step

    def slow_read(feed):  # a slow disk: after the first read, wait until the test looked
        if feed._sampled:
            release.wait(60)
        return read(feed)

    def counted_apply(batch, store):
        steps = [c[2] for c in batch.columns] + [o[1] for o in batch.overview]
        steps = [s for s in steps if len(s)]
        if steps:
            batches.append((int(min(s.min() for s in steps)), int(max(s.max() for s in steps))))
        apply(batch, store)

    monkeypatch.setattr(run_loading.FolderFeed, "read", slow_read)
    monkeypatch.setattr(run_loading.FeedBatch, "apply", counted_apply)
    try:
        panel.set_logdir(tmp_path)
        panel.select([run.name])
        qtbot.waitUntil(lambda: "loss" in window.metrics.plots, timeout=60_000)
        plot = window.metrics.plots["loss"]
        qtbot.waitUntil(lambda: plot.overview_shown() == ["loss (per step)"], timeout=10_000)
        [(store, _)] = panel.picked()
        assert panel.loading() and store.steps["loss"].count() < STEPS // 10
        low, high = batches[0]  # the first batch applied spans the run already
        assert (high - low) >= 0.9 * (STEPS - 1)
        curve = plot.steps["loss"].item
        x, _ = curve.getData()
        assert np.nanmax(x) >= 0.9 * STEPS  # ... and the plot draws all of it
        twin = plot.steps["loss"].smoothed()  # smoothing on: the bold line spans it too
        assert twin is not None and np.nanmax(twin.item.getData()[0]) >= 0.9 * STEPS
    finally:
        release.set()
    qtbot.waitUntil(lambda: not panel.loading(), timeout=120_000)
    panel.poll()
    window.bridge.flush()
    plain = load_folder(run)
    for key, track in plain.steps.items():
        mine = store.steps[key]
        assert mine.count() == track.count() == STEPS
        for a, b in zip(mine.points(), track.points(), strict=True):
            assert a.tolist() == b.tolist()
    assert store.global_step == plain.global_step and store.ended == plain.ended
    qtbot.waitUntil(lambda: plot.overview_shown() == [], timeout=10_000)
    line = plot.steps["loss"]
    assert line.x.tolist() == store.steps["loss"].points()[0].tolist()
