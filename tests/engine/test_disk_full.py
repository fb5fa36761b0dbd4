"""A full disk, stood in for at the file-system boundary (runs anywhere; the real tmpfs test
is tests/e2e/test_faults.py and needs root).

From the fourth checkpoint on, every write of the record (event file, run.json,
events.jsonl) and every checkpoint save raises ``OSError(ENOSPC)``, as a full disk does. The
run must go on to its end with one note for each, and keep what was written.
"""

from __future__ import annotations

import errno
import os

import pytest

from tests.engine.helpers import console, of, run_script
from tfstudio.core.events import CheckpointRefused, CheckpointSaved
from tfstudio.core.options import RunOptions
from tfstudio.core.run_record import read_run_record
from tfstudio.core.runs import describe_run

pytestmark = pytest.mark.tf


class _FullDiskWriter:
    """A record writer stand-in that fails as a full disk does once ``full`` is set."""

    def __init__(self, real, full):
        self.real = real
        self.full = full

    def write(self, record):
        if self.full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real.write(record)

    def write_many(self, records):
        if self.full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real.write_many(records)

    def write_blocks(self, blocks):
        if self.full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real.write_blocks(blocks)

    def flush(self):
        if self.full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real.flush()

    def close(self):
        self.real.close()


def test_a_full_disk_leaves_the_run_going_with_one_note_each(write_script, tmp_path, monkeypatch):
    import tensorflow as tf

    import tfstudio.engine.recorder as recorder_module

    full = [False]
    saves = [0]
    real_init = recorder_module.Recorder.__init__
    real_run_json = recorder_module.write_run_json
    real_save = tf.train.CheckpointManager.save

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self._writer = _FullDiskWriter(self._writer, full)

    def run_json(*args, **kwargs):
        if full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_run_json(*args, **kwargs)

    def save(self, *args, **kwargs):
        if full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        saves[0] += 1
        path = real_save(self, *args, **kwargs)
        full[0] = saves[0] >= 4  # the disk fills up just after the fourth checkpoint
        return path

    real_log = recorder_module.EventsLog.write

    def log_line(self, line):  # events.jsonl: the checkpoints and notices
        if full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_log(self, line)

    monkeypatch.setattr(recorder_module.EventsLog, "write", log_line)
    monkeypatch.setattr(recorder_module.Recorder, "__init__", init)
    monkeypatch.setattr(recorder_module, "write_run_json", run_json)
    monkeypatch.setattr(tf.train.CheckpointManager, "save", save)
    path = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
        m.compile("adam", "mse")
        m.fit(np.ones((160, 8)), np.zeros((160, 1)), batch_size=8, epochs=3, verbose=0)
        print("training went on to the end")
        """
    )
    options = RunOptions(
        logdir=str(tmp_path / "runs"),
        checkpoint_every=2,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        sample_every=1,
    )
    ended, events = run_script(path, cwd=tmp_path, options=options)
    assert full[0]
    assert ended.status == "finished"
    text = console(events)
    assert "training went on to the end" in text
    assert text.count("Checkpoint not saved") == 1 and "the disk is full" in text
    assert text.count("Recording stopped: the disk is full") == 1
    assert len(of(events, CheckpointRefused)) == 1
    assert [e.step for e in of(events, CheckpointSaved)] == [2, 4, 6, 8]
    run_dir = next((tmp_path / "runs").iterdir())
    run = describe_run(run_dir)
    assert run.steps is not None and run.steps > 0  # what was written before stays readable
    # events.jsonl keeps the checkpoints its writer (the pump's thread) had listed when
    # the disk filled (how many depends on that thread's pace): whole lines, in order
    record = read_run_record(run_dir)
    steps = [e.step for e in record.checkpoints]
    assert steps == [2, 4, 6, 8][: len(steps)] and not record.problems
