"""Big runs load on a reading thread: the window keeps answering; damage is shown, not raised."""

from __future__ import annotations

import json
import time

import numpy as np
from PySide6.QtCore import QTimer

from tests.core.tfevents import frame
from tfstudio.engine.recorder import scalars_event  # the recorder's encoding; no TensorFlow


def big_run(folder, steps: int) -> None:
    """A run folder as tfstudio's recorder writes it: one record per step, loss and accuracy."""
    from tensorboard.compat.proto import event_pb2

    folder.mkdir(parents=True)
    described: set[str] = set()
    head = event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()
    with open(folder / "events.out.tfevents.1700000000.test.1.1.v2", "wb") as f:
        f.write(frame(head))
        block = []
        for s in range(1, steps + 1):
            values = {"step/loss": 1.0 / s, "step/accuracy": 1.0 - 1.0 / s}
            block.append(frame(scalars_event(s, values, 1.7e9 + s * 0.01, described)))
            if len(block) == 20_000:
                f.write(b"".join(block))
                block = []
        f.write(b"".join(block))
    info = {"status": "finished", "script": "/p/big.py", "start_time": 1.7e9, "steps": steps}
    (folder / "run.json").write_text(json.dumps(info))


def test_while_a_big_run_loads_the_ui_thread_keeps_its_timers(
    runs_panel, qtbot, tmp_path, monkeypatch
):
    from tfstudio.core import run_loading

    panel = runs_panel
    big_run(tmp_path / "big-20260101-000000", 150_000)
    panel.feeds_chunk_bytes = 1 << 18  # read in 256 KB chunks: the run comes in many pieces
    read, apply = run_loading.FolderFeed.read, run_loading.FeedBatch.apply
    pieces: list[int] = []  # the store's size after each piece: it appears piece by piece

    def slow_read(feed):  # a slow disk: each chunk takes 30 ms on the reading thread
        time.sleep(0.03)
        return read(feed)

    def counted_apply(batch, store):
        apply(batch, store)
        if "loss" in store.steps:
            pieces.append(store.steps["loss"].count())

    monkeypatch.setattr(run_loading.FolderFeed, "read", slow_read)
    monkeypatch.setattr(run_loading.FeedBatch, "apply", counted_apply)
    panel.set_logdir(tmp_path)
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    try:
        panel.select(["big-20260101-000000"])
        started = time.monotonic()
        qtbot.waitUntil(lambda: not panel.loading(), timeout=120_000)
        loading = time.monotonic() - started
    finally:
        timer.stop()
    [(store, _)] = panel.picked()
    assert store.steps["loss"].count() == 150_000 and store.global_step == 150_000
    assert store.nbytes() < 2_000_000  # decimated as it came: no copy of 150k points kept
    assert len(pieces) >= 5 and pieces == sorted(pieces) and pieces[-1] == 150_000
    during = [t for t in ticks if started <= t <= started + loading]
    # Had the reads (each sleeping 30 ms) run on the UI thread, the timer could not have
    # fired between them: it kept firing all along (how regularly is measured in bench/).
    assert len(during) >= 5
    gaps = np.diff(during)
    assert gaps.max() < max(0.5, loading / 3), f"the UI thread stalled {gaps.max():.2f} s"


def test_a_damaged_run_shows_its_good_part_and_says_so(runs_panel, qtbot, tmp_path):
    panel = runs_panel
    run = tmp_path / "hurt-20260101-000000"
    big_run(run, 2_000)
    [events] = list(run.glob("events.out.tfevents.*"))
    data = bytearray(events.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte half way: a bad CRC there
    events.write_bytes(bytes(data))
    (tmp_path / "junk-20260101-000000").mkdir()
    (tmp_path / "junk-20260101-000000" / "events.out.tfevents.1.junk").write_bytes(b"not a record")
    panel.set_logdir(tmp_path)
    names = [panel.tree.topLevelItem(i).text(0) for i in range(panel.tree.topLevelItemCount())]
    assert sorted(names) == ["hurt-20260101-000000", "junk-20260101-000000"]  # both listed
    panel.select(["hurt-20260101-000000", "junk-20260101-000000"])
    qtbot.waitUntil(lambda: not panel.loading(), timeout=60_000)
    stores = {store.name: store for store, _ in panel.picked()}
    hurt, junk = stores["hurt-20260101-000000"], stores["junk-20260101-000000"]
    good = hurt.steps["loss"].count()
    assert 0 < good < 2_000  # read up to the damage
    x, _ = hurt.steps["loss"].points()
    assert x.tolist() == list(range(1, good + 1))
    assert len(hurt.notes) == 1  # one note for the damaged file
    assert len(junk.notes) == 1 and not junk.steps
    assert panel.error_label.isVisible() and "hurt-20260101-000000" in panel.error_label.text()
    assert "junk-20260101-000000" in panel.error_label.text()  # both damaged runs said
