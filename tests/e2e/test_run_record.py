"""A recorded run's folder holds the whole run: console output, checkpoints, notices and
system samples, read back by ``read_run_record`` as the live viewer saw them (issue 56)."""

from __future__ import annotations

import errno
import os
import signal

import numpy as np
import pytest

from tests.e2e.workers import of, run_in_worker
from tfstudio.core.events import (
    CheckpointDeleted,
    CheckpointSaved,
    ConsoleOutput,
    NonFinite,
    RunRecording,
    SystemSampled,
)
from tfstudio.core.options import RunOptions
from tfstudio.core.run_record import CHECKPOINT_EVENTS, NOTICE_EVENTS, read_run_record

pytestmark = pytest.mark.tf

SCRIPT = """
import sys
import numpy as np, keras, tensorflow as tf
print("one to stdout", flush=True)
print("two to stderr", file=sys.stderr, flush=True)
tf.print("three from tf.print")
x = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=8, epochs=2, verbose=0)
print("four after fit", flush=True)
x[5, 0] = np.nan  # the next fit's loss is NaN at its first step: a NaN notice, the run stops
model.fit(x, y, batch_size=64, epochs=1, verbose=0)
print("never printed")
"""


def _console(events: list[object]) -> str:
    return "".join(e.text for e in events if isinstance(e, ConsoleOutput))


def _run_dir(events: list[object]) -> str:
    return next(e.run_dir for e in events if isinstance(e, RunRecording))


def test_a_run_folder_reads_back_the_console_checkpoints_notices_and_system_as_seen_live(
    write_script, tmp_path
):
    path = write_script(SCRIPT)
    options = RunOptions(
        logdir=str(tmp_path / "runs"), checkpoint_every=3, max_to_keep=2, on_nan="stop"
    )
    ended, events = run_in_worker(path, [], options)
    record = read_run_record(_run_dir(events))
    assert not record.problems

    live = _console(events)
    assert record.console == live  # every character, in the order the viewer got them
    marks = ["one to stdout", "two to stderr", "three from tf.print", "four after fit"]
    at = [record.console.index(m) for m in marks]
    assert at == sorted(at)
    assert "never printed" not in record.console

    saved = of(events, CheckpointSaved)
    deleted = {e.path for e in of(events, CheckpointDeleted)}
    assert [e.step for e in saved] == [3, 6, 9, 12, 15]
    assert record.checkpoints == [e for e in saved if e.path not in deleted]
    assert record.checkpoint_events == [e for e in events if isinstance(e, CHECKPOINT_EVENTS)]

    nan = of(events, NonFinite)
    assert len(nan) == 1 and ended.status == "stopped"
    live_notices = [e for e in events if isinstance(e, NOTICE_EVENTS)]
    assert [repr(n) for n in record.notices] == [repr(n) for n in live_notices]  # (NaN != NaN)
    assert any(isinstance(n, NonFinite) and n.global_step == 17 for n in record.notices)

    samples = of(events, SystemSampled)
    assert samples, "no system sample reached the viewer"
    rss = record.system["system/process/rss_bytes"]
    assert len(rss[0]) == len(samples) >= 1
    assert rss[1].tolist() == [s.values["process/rss_bytes"] for s in samples]
    assert np.allclose(rss[0], [s.time for s in samples], atol=1e-3)
    assert (rss[1] > 10 * 2**20).all()  # a process that imported TensorFlow
    assert set(record.system) >= {
        "system/process/cpu_percent",
        "system/machine/cpu_percent",
        "system/machine/memory_used_bytes",
    }


KILLED = """
import time
import numpy as np, keras
x = np.ones((32, 3), dtype="float32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)
for i in range(100000):
    print(f"waiting {i}", flush=True)
    time.sleep(0.02)
"""


def test_a_worker_killed_mid_run_leaves_a_readable_record(write_script, tmp_path):
    path = write_script(KILLED)
    options = RunOptions(logdir=str(tmp_path / "runs"), checkpoint_every=2)

    seen, killed = [], []  # (a line may come in two pieces: its text, then its newline)

    def kill(launcher, batch):
        seen.append(_console(batch))
        if "waiting 25\n" in "".join(seen) and not killed:
            killed.append(launcher.pid())
            os.kill(killed[0], signal.SIGKILL)

    ended, events = run_in_worker(path, [], options, on_events=kill)
    assert ended.status == "failed" and ended.exit_code == 137
    record = read_run_record(_run_dir(events))
    assert record.console == _console(events)
    assert "waiting 25\n" in record.console and "killed (SIGKILL" in record.console
    assert [e.step for e in record.checkpoints] == [2, 4]  # written by the killed worker


def test_a_full_disk_stops_the_output_log_with_one_note_and_the_run_goes_on(
    write_script, tmp_path, monkeypatch
):
    import tfstudio.core.output_log as output_log

    full = [False]

    class FullDisk:
        def __init__(self, f):
            self.f = f

        def write(self, text):
            if full[0]:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self.f.write(text)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(output_log, "open", lambda *a, **k: FullDisk(open(*a, **k)), raising=False)
    path = write_script(
        """
        import time
        for i in range(40):
            print(f"line {i}", flush=True)
            time.sleep(0.02)
        print("the end", flush=True)
        """
    )

    seen = []

    def fill(launcher, batch):
        seen.append(_console(batch))
        if "line 3\n" in "".join(seen):
            full[0] = True

    ended, events = run_in_worker(
        path, [], RunOptions(logdir=str(tmp_path / "runs")), on_events=fill
    )
    live = _console(events)
    assert ended.status == "finished" and "the end" in live
    assert live.count("The console output is no longer recorded") == 1
    assert "No space left on device" in live
    record = read_run_record(_run_dir(events))
    assert "line 0\n" in record.console and "the end" not in record.console
    assert live.startswith(record.console)  # what was written before stays as it was
