"""CheckpointStore on disk: a worker killed with SIGKILL mid-save leaves the last one restorable."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from tfstudio.engine.checkpoints import INDEX_FILE, CheckpointStore, resolve

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]

SAVER = """
import sys
import numpy as np, keras
from tfstudio.engine.checkpoints import CheckpointStore

def build():
    m = keras.Sequential([keras.Input((1000,)), keras.layers.Dense(4000, name="big")])
    m.compile(keras.optimizers.Adam(), "mse")
    return m

if __name__ == "__main__":
    m = build()
    store = CheckpointStore(sys.argv[1], m, m.optimizer, max_to_keep=3)
    store.build_optimizer()
    step = 0
    while True:
        step += 1
        m.get_layer("big").kernel.assign(np.full((1000, 4000), step, "float32"))
        print(f"saving {step}", flush=True)
        store.save(step, loss=float(step))
        print(f"saved {step}", flush=True)
"""


def _save_started(folder: Path, step: int) -> bool:
    """Whether anything of checkpoint ``step`` is on disk yet (``ckpt-N_temp``, its data)."""
    try:
        return any(name.startswith(f"ckpt-{step}") for name in os.listdir(folder))
    except FileNotFoundError:
        return False


def _kill_mid_save(script: Path, folder: Path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("saving 3"):
                # Killed once save 3 has started writing (its first file or folder is
                # there), whatever the disk's speed: a fixed sleep let a fast machine's
                # save finish first.
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline and not _save_started(folder, 3):
                    time.sleep(0.001)
                proc.send_signal(signal.SIGKILL)
                break
        lines.extend(x.strip() for x in proc.stdout.read().splitlines())
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return lines


def test_sigkill_during_a_save_leaves_the_previous_checkpoint_restorable(tmp_path):
    script = tmp_path / "saver.py"
    script.write_text(textwrap.dedent(SAVER))
    folder = tmp_path / "ck"
    lines = _kill_mid_save(script, folder)
    assert lines[-1].startswith("saving"), lines  # killed inside store.save
    killed_in = int(lines[-1].split()[1])
    last_done = killed_in - 1
    assert f"saved {last_done}" in lines

    latest = resolve(folder)
    assert latest.endswith(f"ckpt-{last_done}")
    index = json.loads((folder / INDEX_FILE).read_text())
    assert [c["step"] for c in index["checkpoints"]][-1] == last_done

    sys.path.insert(0, str(tmp_path))
    try:
        import saver
    finally:
        sys.path.remove(str(tmp_path))
    model = saver.build()
    store = CheckpointStore(folder, model, model.optimizer, max_to_keep=3)
    # whatever the kill left of its save (a ckpt-N_temp folder...) went when the folder opened
    assert not [n for n in os.listdir(folder) if "_temp" in n]
    restored = store.restore(str(folder))
    assert restored.step == last_done
    kernel = model.get_layer("big").kernel.numpy()
    assert np.all(kernel == last_done)
    assert [e.step for e in store.entries()][-1] == last_done


@pytest.mark.parametrize("damage", ["flipped data bytes", "truncated data", "garbage index"])
def test_a_corrupt_checkpoint_is_refused_naming_the_file_and_the_model_is_untouched(
    tmp_path, damage
):
    import keras

    from tfstudio.engine.checkpoints import CheckpointMismatch

    def build():
        m = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256), keras.layers.Dense(4)])
        m.compile(keras.optimizers.Adam(), "mse")
        return m

    model = build()
    store = CheckpointStore(tmp_path / "ck", model, model.optimizer)
    store.build_optimizer()
    record = store.save(1, loss=0.0)
    data = Path(record.path + ".data-00000-of-00001")
    index = Path(record.path + ".index")
    if damage == "flipped data bytes":
        raw = bytearray(data.read_bytes())
        for i in range(len(raw) // 3, len(raw) // 3 + 64):
            raw[i] ^= 0xFF
        data.write_bytes(bytes(raw))
    elif damage == "truncated data":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    else:
        index.write_bytes(b"not a checkpoint index" * 10)

    live = build()
    for v in live.trainable_variables:
        v.assign(np.full(v.shape, 7.0, "float32"))
    before = [v.numpy().copy() for v in live.variables]
    live_store = CheckpointStore(tmp_path / "ck", live, live.optimizer)
    with pytest.raises(CheckpointMismatch) as refused:
        live_store.restore(record.path)
    named = index if damage == "garbage index" else data
    assert str(named) in str(refused.value)
    after = [v.numpy() for v in live.variables]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def test_restore_at_start_from_a_corrupt_checkpoint_says_which_file(write_script, tmp_path):
    from tests.engine.helpers import run_script
    from tfstudio.core.events import CheckpointRefused
    from tfstudio.core.options import RunOptions

    path = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        m.compile("adam", "mse")
        m.fit(np.zeros((32, 4)), np.zeros((32, 2)), batch_size=8, epochs=2, verbose=0)
        """
    )
    ended, _ = run_script(
        path, cwd=tmp_path, options=RunOptions(checkpoint_every=2, checkpoint_dir=str(tmp_path))
    )
    assert ended.status == "finished"
    latest = resolve(tmp_path)
    data = Path(latest + ".data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(restore=latest))
    refusals = [e for e in events if isinstance(e, CheckpointRefused)]
    assert refusals and str(data) in refusals[0].reason
    assert ended.status != "finished"


def _small_adam_model() -> object:
    """A Dense(4) over 8 inputs, compiled with Adam (its slots are saved too)."""
    import keras

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile(keras.optimizers.Adam(), "mse")
    return model


def test_a_save_that_never_completed_is_never_offered_and_goes_when_the_folder_opens(tmp_path):
    import shutil

    import tensorflow as tf

    build = _small_adam_model
    model = build()
    folder = tmp_path / "ck"
    store = CheckpointStore(folder, model, model.optimizer)
    store.build_optimizer()
    store.save(1, loss=1.0)
    second = store.save(2, loss=0.5)
    # What a kill inside the save of checkpoint 3 leaves: TensorFlow's temporary folder of
    # shards (written by TensorFlow itself, with a readable index of its shard) and a data
    # file whose checkpoint index was never written.
    shard = folder / "ckpt-3_temp" / "part-00000-of-00001"
    tf.train.Checkpoint(model=model).write(str(shard))
    assert (folder / "ckpt-3_temp" / "part-00000-of-00001.index").exists()
    orphan = folder / "ckpt-3.data-00000-of-00001"
    shutil.copy(second.path + ".data-00000-of-00001", orphan)
    (folder / "ckpt-notes_temperature.txt").write_text("the user's own file")  # stays

    with pytest.raises(FileNotFoundError, match="never completed"):
        resolve(str(shard))  # never restorable, even named outright
    assert resolve(folder).endswith("ckpt-2")

    fresh = build()
    reopened = CheckpointStore(folder, fresh, fresh.optimizer)  # a new run saving here
    assert sorted(reopened.removed_partials) == [str(orphan), str(folder / "ckpt-3_temp")]
    assert not (folder / "ckpt-3_temp").exists() and not orphan.exists()
    assert (folder / "ckpt-notes_temperature.txt").exists()
    assert [e.step for e in reopened.entries()] == [1, 2]
    assert reopened.restore(str(folder)).step == 2
    third = reopened.save(3, loss=0.25)  # the same number saves cleanly
    assert [e.step for e in reopened.entries()] == [1, 2, 3]
    assert resolve(folder) == third.path
    assert CheckpointStore(folder, build()).removed_partials == []  # complete ones stay


def test_a_run_opening_the_folder_says_it_removed_a_partial_save(write_script, tmp_path):
    from tests.engine.helpers import run_script
    from tfstudio.core.events import CheckpointList, ConsoleOutput
    from tfstudio.core.options import RunOptions

    path = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        m.compile("adam", "mse")
        m.fit(np.zeros((32, 4)), np.zeros((32, 2)), batch_size=8, epochs=1, verbose=0)
        """
    )
    folder = tmp_path / "ck"
    options = RunOptions(checkpoint_every=2, checkpoint_dir=str(folder))
    ended, _ = run_script(path, cwd=tmp_path, options=options)
    assert ended.status == "finished"
    partial = folder / "ckpt-6_temp"
    partial.mkdir()
    (partial / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"half a shard")
    ended, events = run_script(path, cwd=tmp_path, options=options)
    assert ended.status == "finished"
    assert not partial.exists()
    notes = "".join(e.text for e in events if isinstance(e, ConsoleOutput))
    assert "ckpt-6_temp" in notes and "never completed" in notes
    for listing in (e for e in events if isinstance(e, CheckpointList)):
        assert not any("_temp" in c.path for c in listing.entries)


def test_a_save_tensorflow_completed_counts_even_if_its_side_index_cannot_be_written(
    tmp_path, monkeypatch
):
    # The disk can fill between TensorFlow's save (complete and listed) and tfstudio's
    # small index of times and losses: the checkpoint is whole, so the save is reported.
    import errno

    import keras

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile(keras.optimizers.Adam(), "mse")
    store = CheckpointStore(tmp_path / "ck", model, model.optimizer)
    store.build_optimizer()
    store.save(1, loss=1.0)

    def full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store, "_write_index", full)
    second = store.save(2, loss=0.5)
    assert resolve(tmp_path / "ck") == second.path
    assert [e.step for e in store.entries()] == [1, 2]
    assert isinstance(store.index_error, OSError)  # kept for the controls to say
    monkeypatch.undo()
    store.save(3, loss=0.25)
    assert store.index_error is None


def test_the_controls_say_when_a_saved_checkpoints_side_index_was_not_written(
    tmp_path, monkeypatch
):
    import errno

    import keras

    from tfstudio.core.channel import Channel
    from tfstudio.core.events import CheckpointSaved, ConsoleOutput
    from tfstudio.engine.control import TrainingController
    from tfstudio.engine.monitor import RunMonitor

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile(keras.optimizers.Adam(), "mse")
    monitor = RunMonitor(Channel())
    monitor.run_dir = tmp_path
    control = TrainingController(monitor)
    control.begin(model, model.optimizer, lambda: None)
    control.save()

    def full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(CheckpointStore, "_write_index", full)
    control.save()
    events = monitor.channel.drain()
    saved = [e for e in events if isinstance(e, CheckpointSaved)]
    notes = [e.text for e in events if isinstance(e, ConsoleOutput)]
    assert len(saved) == 2  # both checkpoints are whole and offered
    assert "not its time and loss in tfstudio's index (the disk is full)" in notes[-1]


def test_a_gans_checkpoint_holds_both_of_its_optimizers(tmp_path):
    """A GAN's `train_step` applies `d_opt` and `g_opt` of its own; the controls save the
    one that steps, and the model's attributes carry the other: a restore puts back the
    state of both (Adam's moments), not one."""
    import keras
    import tensorflow as tf

    class GAN(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
            self.g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4)])

        def compile(self, d_opt, g_opt):
            super().compile()
            self.d_opt, self.g_opt = d_opt, g_opt

        def train_step(self, data):
            z = data[:, :2]
            with tf.GradientTape() as tape:
                g_loss = tf.reduce_mean(self.d(self.g(z)))
            grads = tape.gradient(g_loss, self.g.trainable_weights)
            self.g_opt.apply_gradients(zip(grads, self.g.trainable_weights, strict=True))
            with tf.GradientTape() as tape:
                d_loss = tf.reduce_mean(self.d(data)) - g_loss
            grads = tape.gradient(d_loss, self.d.trainable_weights)
            self.d_opt.apply_gradients(zip(grads, self.d.trainable_weights, strict=True))
            return {"d_loss": d_loss, "g_loss": g_loss}

    gan = GAN()
    gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    gan.fit(x, batch_size=16, epochs=1, verbose=0)
    store = CheckpointStore(tmp_path / "ck", gan, gan.g_opt)  # the optimizer that stepped
    saved = {id(v): v.numpy().copy() for o in (gan.d_opt, gan.g_opt) for v in o.variables}
    record = store.save(4, loss=0.0)
    gan.fit(x, batch_size=16, epochs=1, verbose=0)  # both optimizers move on
    for optimizer in (gan.d_opt, gan.g_opt):  # its step count and moments moved
        changed = [v.path for v in optimizer.variables if not np.array_equal(v, saved[id(v)])]
        assert len(changed) >= 3, (optimizer.name, changed)
    store.restore(record.path)
    for optimizer in (gan.d_opt, gan.g_opt):
        for v in optimizer.variables:
            np.testing.assert_array_equal(v.numpy(), saved[id(v)], err_msg=v.path)


def test_a_checkpoint_whose_side_index_write_never_happened_is_still_listed_last(tmp_path):
    # A SIGKILL between TensorFlow's save (data, index, state file) and tfstudio's side index
    # of times and losses: the folder's latest checkpoint must be listed, or a restore of
    # "the latest" and the list the controls show would disagree.
    build = _small_adam_model
    model = build()
    folder = tmp_path / "ck"
    store = CheckpointStore(folder, model, model.optimizer)
    store.save(1, loss=1.0)
    store.save(2, loss=0.5)
    store.step.assign(3)
    store.manager.save(checkpoint_number=3)  # what the killed save completed

    fresh = build()
    reopened = CheckpointStore(folder, fresh, fresh.optimizer)
    listed = reopened.entries()
    assert [e.step for e in listed] == [1, 2, 3]
    assert listed[-1].path == resolve(folder)
    assert math.isnan(listed[-1].loss) and listed[-1].wall_time >= listed[1].wall_time
    assert [e.loss for e in listed[:2]] == [1.0, 0.5]  # the recorded ones keep their losses
    assert reopened.restore(listed[-1].path).step == 3
    reopened.save(4, loss=0.25)  # the side index now holds the unrecorded one too
    steps = [c["step"] for c in json.loads((folder / INDEX_FILE).read_text())["checkpoints"]]
    assert steps == [1, 2, 3, 4]
