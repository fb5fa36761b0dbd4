"""Following a run folder: a poll that finds nothing new costs a stat, not a re-read."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.core.tfevents import EventWriter, write_events
from tfstudio.core import run_loading
from tfstudio.core.run_loading import FolderFeed


def age(*paths) -> None:
    """Date files back a minute: a stamp taken now is trusted (no change within a tick)."""
    past = time.time() - 60
    for p in paths:
        os.utime(p, (past, past))


def test_an_unchanged_folder_is_not_listed_or_its_run_json_read_again(tmp_path, monkeypatch):
    run = tmp_path / "run"
    writer = write_events(run, {"step/loss": [(1, 1.0), (2, 0.5)]}, keep_open=True)
    (run / "run.json").write_text(json.dumps({"status": "finished", "steps": 2}))
    [events] = list(run.glob("events.out.tfevents.*"))
    age(run / "run.json", events, run)
    reads = []
    real = run_loading.read_run_json
    monkeypatch.setattr(run_loading, "read_run_json", lambda p: reads.append(p) or real(p))
    feed = FolderFeed(run)
    first = feed.read()
    assert first.points == 2 and first.ended is not None
    listed = feed.reader.listings
    for _ in range(5):  # nothing changed: no listing, no run.json, no points
        batch = feed.read()
        assert batch.points == 0 and not batch.fits
    assert feed.reader.listings == listed and len(reads) == 1

    writer.add("step/loss", 3, 0.25)  # appended: only the new bytes are read
    age(events)
    batch = feed.read()
    assert [c[2].tolist() for c in batch.columns] == [[3]] and feed.reader.listings == listed
    assert len(reads) == 1

    (run / "run.json").write_text(json.dumps({"status": "finished", "steps": 3, "x": 1}))
    feed.read()
    assert len(reads) == 2  # changed: read again

    validation = EventWriter(run / "validation")  # a new folder and file
    validation.add("epoch_loss", 3, 0.75)
    validation.close()
    batch = feed.read()
    assert feed.reader.listings == listed + 1
    assert [(c[0], c[2].tolist()) for c in batch.columns] == [("val_loss", [3])]
    writer.close()


def test_a_few_appended_records_decode_as_the_vectorised_path_decodes_them():
    import numpy as np

    from tests.core.tfevents import frame, scalar_event
    from tfstudio.core import eventfile
    from tfstudio.core.eventfile import EventFileReader
    from tfstudio.engine.recorder import scalars_event

    described: set[str] = set()

    def recorder(steps):
        return b"".join(
            frame(scalars_event(s, {"step/loss": 1 / s, "step/accuracy": 1 - 1 / s}, s, described))
            for s in steps
        )

    # tfstudio's layout, another writer's in between, steps of wider varints, a restore
    raw = recorder(range(1, 200)) + b"".join(frame(scalar_event("x", s, s / 2)) for s in range(9))
    raw += recorder(range(126, 300))
    few = EventFileReader(Path("/few"))._decode_few(raw, True)[2].columns()
    many = EventFileReader(Path("/many"))
    assert len(raw) > eventfile.SMALL_BYTES  # so _decode takes the vectorised path
    vectorised = many._decode(raw, True)[2].columns()
    assert few.keys() == vectorised.keys() == {"step/loss", "step/accuracy", "x"}
    for tag, cols in few.items():
        for name in ("steps", "values", "wall"):
            assert np.array_equal(getattr(cols, name), getattr(vectorised[tag], name))
