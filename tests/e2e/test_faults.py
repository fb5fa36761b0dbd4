"""Faults survived, each on real processes: a killed viewer, a script's child processes,
a full disk, a corrupt checkpoint, a worker killed mid-checkpoint, an OOM kill.

Timeouts here are safety nets, never measurements (bench/soak.py measures).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import wait_for
from tests.e2e.workers import of, run_in_worker
from tfstudio.core.events import MonitorError, RunRecording, StepEnded
from tfstudio.core.options import RunOptions
from tfstudio.core.runs import describe_run, read_run_json, read_scalars

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")

LONG_FIT = """
import numpy as np, keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(np.zeros((64000, 4)), np.zeros((64000, 1)), batch_size=8, epochs=100, verbose=0)
"""

# A viewer with no window: what the window does with runs, in a process the test can kill.
VIEWER = """
import sys, time
from tfstudio.core.channel import Channel
from tfstudio.core.events import RunRecording, StepEnded, step_rows
from tfstudio.core.options import RunOptions
from tfstudio.core.process import ProcessLauncher

channel = Channel()
launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
launcher.start(sys.argv[1], (), RunOptions(logdir=sys.argv[2]))
print("worker", launcher.pid(), flush=True)
steps = 0
while True:
    for event in step_rows(channel.drain()):
        if isinstance(event, RunRecording):
            print("recording", event.run_dir, flush=True)
        elif isinstance(event, StepEnded):
            steps += 1
            if steps == 20:
                print("stepping", flush=True)
    time.sleep(0.02)
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_window_killed_mid_run_ends_the_worker_and_marks_the_run_interrupted(
    write_script, tmp_path
):
    script = write_script(LONG_FIT)
    viewer = write_script(VIEWER, name="viewer.py")
    proc = subprocess.Popen(
        [sys.executable, str(viewer), str(script), str(tmp_path / "runs")],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        lines = {}
        assert proc.stdout is not None
        for line in proc.stdout:
            key, _, value = line.strip().partition(" ")
            lines[key] = value
            if key == "stepping":
                break
        worker = int(lines["worker"])
        run_dir = lines["recording"]
        assert not _gone(worker)
        proc.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        wait_for(lambda: _gone(worker), timeout=30)
        print(f"worker ended {time.monotonic() - killed_at:.2f} s after its viewer was killed")
    finally:
        proc.kill()
        proc.wait(timeout=30)
    info = read_run_json(run_dir)
    assert info["status"] == "interrupted"  # written by the worker, not guessed from a pid
    run = describe_run(run_dir)
    assert run.status == "interrupted" and run.steps and run.steps >= 20
    listing = subprocess.run(
        [sys.executable, "-m", "tfstudio", "runs", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert listing.returncode == 0 and "interrupted" in listing.stdout


# -- a script's own child processes ------------------------------------------------

CHILDREN = """
import json, multiprocessing as mp, os, signal, sys, time
import numpy as np, keras, psutil

MODE = sys.argv[1]


def stubborn():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # survives a terminal's Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)


def square(x):
    return x * x


class Batches(keras.utils.PyDataset):
    def __init__(self):
        super().__init__(workers=2, use_multiprocessing=True)

    def __len__(self):
        return 100000

    def __getitem__(self, i):
        return np.zeros((8, 4), "float32"), np.zeros((8, 1), "float32")


class Report(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 5:
            kids = [p.pid for p in psutil.Process().children(recursive=True)]
            json.dump(kids, open("children.json", "w"))
            if MODE == "crash":
                raise RuntimeError("the script failed with its children running")


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    pool = ctx.Pool(2)
    pool.map(square, range(4))
    loner = ctx.Process(target=stubborn)  # not a daemon: Python waits for it at exit
    loner.start()
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    m.fit(Batches(), epochs=100, verbose=0, callbacks=[Report()])
"""


def _children(tmp_path: Path) -> list[int]:
    path = tmp_path / "children.json"
    return json.loads(path.read_text()) if path.exists() and path.stat().st_size else []


def _assert_all_end(pids: list[int]) -> None:
    wait_for(lambda: all(_gone(p) for p in pids), timeout=60)


@pytest.mark.parametrize("how", ["stop", "crash", "window closes"])
def test_a_scripts_child_processes_end_with_its_run(write_script, tmp_path, how):
    script = write_script(CHILDREN)
    pressed = []

    def act(launcher, batch):
        if pressed or len(_children(tmp_path)) < 5:  # pool (2) + loner + PyDataset workers (2)
            return
        pressed.append(True)
        if how == "stop":
            launcher.stop()
        elif how == "window closes":
            launcher.shutdown()  # what closing the window does

    mode = "crash" if how == "crash" else "fit"
    ended, events = run_in_worker(script, [mode], RunOptions(record=False), on_events=act)
    pids = _children(tmp_path)
    assert len(pids) >= 5, pids
    if how == "crash":
        assert ended.status == "failed"
    _assert_all_end(pids)


def test_tfstudio_run_interrupted_ends_the_scripts_child_processes(write_script, tmp_path):
    script = write_script(CHILDREN)
    # The terminal: a session of its own, Ctrl-C is SIGINT to its foreground group.
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfstudio", "run", "--no-record", str(script), "fit"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,
    )
    try:
        wait_for(lambda: len(_children(tmp_path)) >= 5 or proc.poll() is not None, timeout=180)
        pids = _children(tmp_path)
        assert len(pids) >= 5, proc.stderr.read() if proc.poll() is not None else pids
        for _ in range(2):  # Ctrl-C, then Ctrl-C again
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.5)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _assert_all_end(pids)


# -- the kernel's OOM killer ---------------------------------------------------------

WAITS = "import time\nprint('waiting', flush=True)\nwhile True:\n    time.sleep(0.05)\n"


def test_a_sigkill_while_the_kernels_oom_count_grows_is_named_an_oom_kill(
    write_script, monkeypatch
):
    """At the boundary: the worker dies of SIGKILL while the kernel's counter grows."""
    import tfstudio.core.process as process

    kills = [0]
    monkeypatch.setattr(process, "oom_kill_count", lambda: kills[0])
    script = write_script(WAITS)

    def oom(launcher, batch):
        if any("waiting" in getattr(e, "text", "") for e in batch):
            kills[0] += 1  # what the kernel does as it picks the worker
            os.kill(launcher.pid(), signal.SIGKILL)

    ended, _ = run_in_worker(script, [], RunOptions(record=False), on_events=oom)
    assert (ended.status, ended.exit_code) == ("failed", 137)
    assert "killed by the kernel's out-of-memory killer" in ended.message


def _memory_cgroup(tmp_name: str, limit: int) -> Path | None:
    """A memory-limited cgroup this test may move a process into (None: not allowed here)."""
    v2 = Path("/sys/fs/cgroup")
    v1 = v2 / "memory"
    try:
        if (v1 / "cgroup.procs").exists():
            group = v1 / tmp_name
            group.mkdir(exist_ok=True)
            (group / "memory.limit_in_bytes").write_text(str(limit))
            swappiness = group / "memory.swappiness"
            if swappiness.exists():
                swappiness.write_text("0")
            return group
        if "memory" in (v2 / "cgroup.controllers").read_text().split():
            group = v2 / tmp_name
            group.mkdir(exist_ok=True)
            (group / "memory.max").write_text(str(limit))
            if (group / "memory.swap.max").exists():
                (group / "memory.swap.max").write_text("0")
            return group
    except OSError:
        return None
    return None


GREEDY = """
import os, sys, numpy as np
open(os.path.join(sys.argv[1], "cgroup.procs"), "w").write(str(os.getpid()))
print("confined", flush=True)
blocks = []
while True:
    blocks.append(np.ones(50_000_000 // 8))  # 50 MB, touched
"""


def test_a_real_oom_kill_is_named(write_script, tmp_path):
    """The real thing where this machine lets a test make a memory cgroup (root, Linux)."""
    group = _memory_cgroup(f"tfstudio-oom-{os.getpid()}", 256 * 1024 * 1024)
    if group is None:
        pytest.skip("no memory cgroup can be made here (needs root and a cgroup mount)")
    try:
        ended, _ = run_in_worker(write_script(GREEDY), [str(group)], RunOptions(record=False))
    finally:
        try:
            group.rmdir()
        except OSError:
            pass
    assert (ended.status, ended.exit_code) == ("failed", 137), ended
    assert "killed by the kernel's out-of-memory killer" in ended.message


# -- the worker killed during a checkpoint -----------------------------------------


def test_a_worker_killed_during_a_checkpoint_leaves_a_folder_that_restores(tmp_path):
    import random

    from tests.e2e.checkpoint_kill import kill_during_a_save, restores, write_saver
    from tfstudio.core.channel import Channel
    from tfstudio.core.process import ProcessLauncher

    script = write_saver(tmp_path)
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    try:
        for round_ in range(2):
            folder = tmp_path / f"ck{round_}"
            saves = kill_during_a_save(launcher, channel, script, folder, random.Random(round_))
            assert len(saves) >= 2
            ok, detail = restores(folder, script)
            assert ok, detail
    finally:
        launcher.shutdown()


# -- the disk fills up ---------------------------------------------------------------

SAVES_EVERY_STEP = """
import time
import numpy as np, keras
m = keras.Sequential([keras.Input((256,)), keras.layers.Dense(256), keras.layers.Dense(1)])
m.compile(keras.optimizers.Adam(1e-3), "mse")
x = np.random.default_rng(0).normal(size=(64, 256)).astype("float32")
class Slow(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.01)
m.fit(x, np.zeros((64, 1), "float32"), batch_size=8, epochs=40, verbose=0, callbacks=[Slow()])
print("training went on to the end")
"""


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MB tmpfs (root only); skips where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> None:
    """Write a file until the disk has no room left (unbuffered: closing it must not try
    to write a leftover buffer onto the full disk)."""
    try:
        with open(disk / "filler", "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 65536)
    except OSError:
        pass


def test_a_full_disk_during_recording_and_checkpoints_leaves_the_run_going(
    write_script, tmp_path, small_disk
):
    from tfstudio.core.events import CheckpointRefused, CheckpointSaved, ConsoleOutput
    from tfstudio.engine.checkpoints import resolve

    script = write_script(SAVES_EVERY_STEP)
    before: list[CheckpointSaved] = []
    filled = []

    def fill_after_some_saves(launcher, batch):
        before.extend(e for e in batch if isinstance(e, CheckpointSaved) and not filled)
        if not filled and len(before) >= 4:
            _fill(small_disk)
            filled.append(before[-1].step)

    options = RunOptions(
        logdir=str(small_disk / "runs"),
        checkpoint_every=1,
        checkpoint_dir=str(small_disk / "checkpoints"),
        max_to_keep=3,
        sample_every=1,
    )
    ended, events = run_in_worker(script, [], options, on_events=fill_after_some_saves)
    assert filled, "the disk was never filled"
    assert ended.status == "finished", ended
    console = "".join(e.text for e in events if isinstance(e, ConsoleOutput))
    assert "training went on to the end" in console
    # One clear note per thing that failed, not one per step.
    assert console.count("Checkpoint not saved") == 1, console
    assert "the disk is full" in console
    assert console.count("Recording stopped") == 1, console
    assert len([e for e in events if isinstance(e, CheckpointRefused)]) == 1
    # Nothing written before is lost: the checkpoints restore, the record reads back.
    latest = resolve(str(small_disk / "checkpoints"))
    # the newest one the run reported saved (one more may land while the disk is filled)
    assert latest in {e.path for e in events if isinstance(e, CheckpointSaved)}
    import tensorflow as tf

    reader = tf.train.load_checkpoint(latest)
    for key in reader.get_variable_to_shape_map():
        reader.get_tensor(key)
    run_dir = next((small_disk / "runs").iterdir())
    run = describe_run(run_dir)
    # run.json as last refreshed (every 0.5 s: the disk may fill before its first refresh)
    assert run.steps is not None and run.status in ("interrupted", "finished", "running"), run
    scalars = read_scalars(run_dir)  # the event file, its end cut off by the full disk
    assert scalars and max(len(curve.steps) for curve in scalars.values()) >= 1


TWO_FITS = """
import time
import numpy as np, keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
x, y = np.zeros((256, 4)), np.zeros((256, 1))
m.fit(x, y, batch_size=8, epochs=2, verbose=0)
time.sleep(0.3)
m.fit(x, y, batch_size=8, epochs=2, verbose=0)
"""


def test_a_batch_the_window_cannot_read_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    """A message that fails to unpickle (here: the first block of steps) is skipped.

    The reader used to die with it: the run never ended in the window, and the worker
    blocked on its full socket.
    """
    import tfstudio.core.events_fit as events_module

    unpack = events_module._unpack_steps
    failed: list[bool] = []

    def damaged(*args):
        if not failed:
            failed.append(True)
            raise ValueError("damaged in transit")
        return unpack(*args)

    monkeypatch.setattr(events_module, "_unpack_steps", damaged)
    script = tmp_path / "two_fits.py"
    script.write_text(TWO_FITS)
    ended, events = run_in_worker(
        script, options=RunOptions(logdir=str(tmp_path / "runs"), inspector=False), timeout=90
    )
    assert failed and ended.status == "finished", ended
    errors = of(events, MonitorError)
    assert len(errors) == 1 and errors[0].where == "receiving events"
    assert "ValueError: damaged in transit" in errors[0].message
    # The second fit's steps all arrived (batches after the damaged one are read).
    second = [e.step for e in of(events, StepEnded) if e.fit_index == 1]
    assert len(second) == 64 and second[-1] == 32
    # The record has every step, the skipped ones too.
    run_dir = next(e.run_dir for e in events if isinstance(e, RunRecording))
    assert read_scalars(run_dir)["step/loss"].steps == list(range(1, 129))
