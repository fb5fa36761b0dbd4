"""One run, two sources, one model: a real script's events fill a RunModel live, its folder
fills another, and the two are equal in every part a view shows (issue 56's Done-when).

Where a part cannot be equal by design, the rule is written here and asserted:

- inspector statistics are recorded as float32 scalars (as ``tf.summary`` writes them): the
  recorded value is the live one rounded to float32; a histogram's range comes back from
  its bucket edges (``lo + (hi - lo) * i / bins``, so ``hi`` within 1e-12 relative;
  a histogram of one value, ``lo == hi``, is recorded over ``[lo, lo + 1e-12]``);
  the sampler's status and the last sample's thumbnails are the live view's only (not
  recorded); the model tree comes back from the variables' paths and shapes (layer
  classes and output shapes are not recorded), its variables as live:
- the console is bounded (the newest :data:`~tfstudio.core.run_model.CONSOLE_MAX_CHARS`
  characters live; the recorder's own bound on ``output.log``): this run is far below both,
  so the texts are equal;
- progress carries the live rate and time left, which a folder cannot have: the step the
  run reached and how it ended are equal.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.e2e.workers import run_in_worker
from tfstudio.core.events import RunRecording
from tfstudio.core.options import RunOptions
from tfstudio.core.run_model import RunModel

pytestmark = pytest.mark.tf

SCRIPT = """
import sys
import numpy as np, keras, tensorflow as tf
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(48, 3)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"),
                      keras.layers.Dense(1, activation="sigmoid")], name="tiny")
m.compile(keras.optimizers.Adam(0.01), "binary_crossentropy", metrics=["accuracy"])
print("before fit", flush=True)
print("a warning on stderr", file=sys.stderr, flush=True)


@tf.function
def doubled(v):
    return v * 2


# a tf.function traced again for every batch (a new shape each time): a retracing notice
retrace = keras.callbacks.LambdaCallback(
    on_train_batch_end=lambda batch, logs: doubled(tf.zeros((batch + 1,)))
)
m.fit(x, y, batch_size=8, epochs=2, validation_split=0.25, verbose=0, callbacks=[retrace])
print("after fit", flush=True)
"""


def same_tracks(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        xa, ya = a[key].points()
        xb, yb = b[key].points()
        np.testing.assert_array_equal(xa, xb, err_msg=key)
        np.testing.assert_array_equal(ya, yb, err_msg=key)
        assert a[key].breaks == b[key].breaks, key


def same_histories(live: dict, folder: dict, what: str) -> None:
    assert sorted(live) == sorted(folder), what
    for path, a in live.items():
        b = folder[path]
        assert a.steps == b.steps, (what, path)
        assert a.hists == b.hists, (what, path)
        for key, values in b.scalars.items():
            recorded = np.asarray(values, np.float32)
            np.testing.assert_array_equal(
                np.asarray(a.scalars[key], np.float32), recorded, err_msg=f"{what} {path} {key}"
            )
        np.testing.assert_allclose(
            a.ranges, b.ranges, rtol=1e-12, atol=1.0001e-12, err_msg=f"{what} {path}"
        )


def test_a_run_taken_live_and_read_from_its_folder_is_one_model(write_script, tmp_path):
    script = write_script(SCRIPT)
    options = RunOptions(
        logdir=str(tmp_path / "runs"),
        sample_every=1,  # the inspector samples every step: its histories are long
        checkpoint_every=3,
        checkpoint_dir=str(tmp_path / "ckpt"),
    )
    ended, events = run_in_worker(script, options=options)
    assert ended.status == "finished", ended

    live = RunModel(live=True)
    live.apply(events)
    [recording] = [e for e in events if isinstance(e, RunRecording)]
    folder = RunModel()
    folder.load(recording.run_dir)

    # metrics: every per-step value exact, epoch means, val_ points, the learning rate
    m, f = live.metrics, folder.metrics
    assert m.steps["loss"].count() == 10  # 2 epochs of 5 batches (36 samples, batch 8)
    same_tracks(m.steps, f.steps)
    same_tracks(m.running, f.running)
    same_tracks(m.epochs, f.epochs)
    assert m.epoch_steps == f.epoch_steps == [5.0, 10.0]
    assert [(x.fit_index, x.global_step) for x in m.fits] == [
        (x.fit_index, x.global_step) for x in f.fits
    ]
    assert m.fit_steps == f.fit_steps and m.fit_loss == f.fit_loss
    assert m.global_step == f.global_step == 10
    assert m.ended.status == f.ended.status == "finished"

    # inspector: weights, gradients and layer outputs at every sampled step
    i, j = live.inspector, folder.inspector
    assert len(i.weights) == 4 and len(next(iter(i.weights.values())).steps) >= 9
    same_histories(i.weights, j.weights, "weights")
    same_histories(i.gradients, j.gradients, "gradients")
    same_histories(i.outputs, j.outputs, "outputs")
    same_histories({"": i.global_norm}, {"": j.global_norm}, "global norm")
    assert i.ended and j.ended
    [live_tree], [folder_tree] = i.trees.values(), j.trees.values()

    def variables(node):
        return {v.path: v.shape for v in node.variables} | {
            p: s for c in node.children for p, s in variables(c).items()
        }

    assert variables(folder_tree.root) == variables(live_tree.root)
    assert folder_tree.root.trainable_params == live_tree.root.trainable_params == 21

    # console: what the script printed, stdout and stderr interleaved, in order
    text = live.console.text()
    assert text.index("before fit") < text.index("a warning on stderr") < text.index("after fit")
    assert folder.console.text() == text

    # every part was read (a folder without a console or system samples would say so)
    assert folder.notes == [] and live.notes == []

    # system samples, checkpoints, notices, hyperparameters
    assert sorted(folder.system.series) == sorted(live.system.series)
    for tag in live.system.series:
        np.testing.assert_array_equal(live.system.arrays(tag)[1], folder.system.arrays(tag)[1])
    assert [c.step for c in live.checkpoints] == [3, 6, 9]
    assert folder.checkpoints == live.checkpoints
    assert folder.notices == live.notices and folder.advice == live.advice
    assert "retracing" in [n.kind for n in live.notices], live.notices
    assert live.hparams == folder.hparams
    assert folder.hparams.get("batch_size") == 8 and folder.hparams.get("epochs") == 2

    # progress: the step the run reached and how it ended
    assert live.progress.global_step == folder.progress.global_step == 10
    assert live.progress.ended and folder.progress.ended
