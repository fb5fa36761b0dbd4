"""One round of "the worker is SIGKILLed while it saves a checkpoint", for the test and the soak.

A run saves a ~50 MB checkpoint (a Dense layer and its Adam slots) after every
step, so a save takes most of each step: a kill at a random moment after the
first save lands inside a save almost every time. The folder must then restore:
its latest checkpoint (and every one its index lists) loads into a fresh model.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

from tfstudio.core.channel import Channel
from tfstudio.core.events import CheckpointSaved, RunEnded, StepEnded, step_rows
from tfstudio.core.options import RunOptions
from tfstudio.core.process import ProcessLauncher

SAVER = """
import numpy as np, keras

def build():
    m = keras.Sequential([keras.Input((1000,)), keras.layers.Dense(4000, name="big")])
    m.compile(keras.optimizers.Adam(1e-3), "mse")
    return m

if __name__ == "__main__":
    m = build()
    x = np.random.default_rng(0).normal(size=(64, 1000)).astype("float32")
    m.fit(x, np.zeros((64, 4000), "float32"), batch_size=8, epochs=1000, verbose=0)
"""


def write_saver(folder: Path) -> Path:
    """Write the saving script into ``folder``; returns its path."""
    path = folder / "saver.py"
    path.write_text(SAVER)
    return path


def kill_during_a_save(
    launcher: ProcessLauncher,
    channel: Channel,
    script: Path,
    checkpoints: Path,
    rng: random.Random,
    timeout: float = 300.0,
) -> list[CheckpointSaved]:
    """Run ``script`` saving every step; SIGKILL its worker at a random moment inside a save.

    Returns the saves the run reported before it died.
    """
    options = RunOptions(
        record=False, inspector=False, checkpoint_every=1, checkpoint_dir=str(checkpoints)
    )
    launcher.start(str(script), (), options)
    saves: list[CheckpointSaved] = []
    deadline = time.monotonic() + timeout
    killed = False
    while True:
        assert time.monotonic() < deadline, f"no end of the run after {timeout} s"
        events = step_rows(channel.drain())
        for event in events:
            if isinstance(event, CheckpointSaved):
                saves.append(event)
            elif isinstance(event, StepEnded) and not killed and len(saves) >= 2:
                # This step's save begins as its hook returns: kill somewhere inside it.
                time.sleep(rng.uniform(0.0, 0.8 * min(s.seconds for s in saves)))
                pid = launcher.pid()
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                killed = True
        if any(isinstance(e, RunEnded) for e in events):
            return saves
        time.sleep(0.002)


def left_partial(checkpoints: Path) -> bool:
    """Whether the kill left a save half-done: TensorFlow's temporary shard folder, or data
    without its index."""
    names = {entry.name for entry in checkpoints.iterdir()}
    if any(name.endswith("_temp") for name in names):
        return True
    stems = {name.split(".")[0] for name in names if name.startswith("ckpt-")}
    return any(f"{stem}.index" not in names for stem in stems)


def restores(checkpoints: Path, script: Path) -> tuple[bool, str]:
    """Whether the folder's latest checkpoint and every listed one load into a fresh model."""
    import importlib.util

    from tfstudio.engine.checkpoints import CheckpointStore, resolve

    spec = importlib.util.spec_from_file_location("saver_model", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        model = module.build()
        store = CheckpointStore(checkpoints, model, model.optimizer, max_to_keep=5)
        latest = resolve(str(checkpoints))
        listed = [e.path for e in store.entries()]
        if not listed or listed[-1] != latest:
            return False, f"the index lists {listed}, the latest is {latest}"
        for path in listed:
            store.restore(path)
        restored = store.restore(latest)
        return True, f"restored step {restored.step} of {len(listed)} listed"
    except Exception as exc:  # noqa: BLE001 - a failure is the answer
        return False, f"{type(exc).__name__}: {exc}"
