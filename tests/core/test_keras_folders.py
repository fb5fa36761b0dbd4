"""A folder written by plain Keras's ``TensorBoard`` callback reads as a live run shows it.

``keras.callbacks.TensorBoard(update_freq="batch", histogram_freq=1)`` with validation
data writes Keras's running means at batch steps, epoch values at epoch *numbers* and
histograms at epoch numbers, in ``train/`` and ``validation/``. The promises: each
epoch value lands at the step where its epoch ended; the per-step line is each batch's
own loss (de-averaged as live runs do), equal to the model's own per-batch losses; the
folder is one run named after it; its histograms give named variables with figures.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tfstudio.core.recorded import inspector_events
from tfstudio.core.run_loading import FolderFeed, load_folder
from tfstudio.core.run_store import EPOCH, STEP
from tfstudio.core.runs import RunReader, list_runs

pytestmark = pytest.mark.tf

BATCH, SAMPLES, EPOCHS = 8, 40, 3  # 5 batches an epoch, all of one size
STEPS = SAMPLES // BATCH


def _write_keras_folder(log_dir: str) -> dict:
    """Train a tiny model with Keras's TensorBoard callback; return what Keras itself said:
    the running loss after each batch, each batch's own loss (computed by the model on the
    batch, with the weights the step started from), and each epoch's logs."""
    import keras

    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(SAMPLES, 4)).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("float32")[:, None]
    xv = rng.normal(size=(16, 4)).astype("float32")
    yv = (xv[:, 0] > 0).astype("float32")[:, None]
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(3, activation="tanh", name="hidden"),
            keras.layers.Dense(1, activation="sigmoid", name="out"),
        ],
        name="tiny",
    )
    model.compile(keras.optimizers.SGD(0.5), "binary_crossentropy", metrics=["accuracy"])
    bce = keras.losses.BinaryCrossentropy()
    seen: dict = {"running": [], "running_acc": [], "own": [], "epochs": []}

    class Oracle(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            xb, yb = x[batch * BATCH : (batch + 1) * BATCH], y[batch * BATCH : (batch + 1) * BATCH]
            seen["own"].append(float(bce(yb, self.model(xb, training=True))))

        def on_train_batch_end(self, batch, logs=None):
            seen["running"].append(float(logs["loss"]))
            seen["running_acc"].append(float(logs["accuracy"]))

        def on_epoch_end(self, epoch, logs=None):
            seen["epochs"].append(dict(logs))

    model.fit(
        x,
        y,
        batch_size=BATCH,
        epochs=EPOCHS,
        shuffle=False,
        validation_data=(xv, yv),
        verbose=0,
        callbacks=[
            Oracle(),
            keras.callbacks.TensorBoard(log_dir, update_freq="batch", histogram_freq=1),
        ],
    )
    return seen


@pytest.fixture(scope="module")
def keras_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("logs") / "adam-small"
    seen = _write_keras_folder(str(run_dir))
    return run_dir, seen


def _deaveraged(running: list[float]) -> np.ndarray:
    """The batches' own values from Keras's running means: k*m_k - (k-1)*m_{k-1},
    restarting at each epoch (the batches are all of one size)."""
    out = []
    for i, m in enumerate(running):
        k = i % STEPS + 1
        out.append(m if k == 1 else k * m - (k - 1) * running[i - 1])
    return np.asarray(out)


def test_batch_values_are_each_batchs_own_loss(keras_run):
    run_dir, seen = keras_run
    store = load_folder(run_dir)
    loss = store.steps["loss"]
    assert loss.kind == STEP
    xs, ys = loss.points()
    np.testing.assert_array_equal(xs, np.arange(1, EPOCHS * STEPS + 1))
    # exactly the de-averaging live runs do, of the running means Keras reported...
    np.testing.assert_allclose(ys, _deaveraged(seen["running"]), rtol=1e-12, atol=0)
    # ...and the model's own loss on each batch (computed apart, before its step)
    np.testing.assert_allclose(ys, seen["own"], rtol=2e-5, atol=1e-6)
    # not Keras's running mean (what the folder holds): that differs after each epoch's first
    assert not np.allclose(ys, seen["running"], rtol=1e-4)
    acc_x, acc = store.steps["accuracy"].points()
    np.testing.assert_allclose(acc, _deaveraged(seen["running_acc"]), rtol=1e-12, atol=1e-12)
    # a batch of 8 samples has an accuracy in eighths
    np.testing.assert_allclose(acc * BATCH, np.round(acc * BATCH), atol=1e-5)


def test_epoch_values_land_where_their_epoch_ended(keras_run):
    run_dir, seen = keras_run
    store = load_folder(run_dir)
    ends = [float(STEPS * (e + 1)) for e in range(EPOCHS)]  # 5, 10, 15
    assert store.epoch_steps == ends
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        track = store.epochs[key]
        assert track.kind == EPOCH
        xs, ys = track.points()
        np.testing.assert_array_equal(xs, ends, err_msg=key)
        want = [e[key] for e in seen["epochs"]]
        np.testing.assert_allclose(ys, want, rtol=1e-6, err_msg=key)
    # the epoch's mean is the last running mean of the epoch (what Keras prints)
    np.testing.assert_allclose(
        store.epochs["loss"].points()[1], seen["running"][STEPS - 1 :: STEPS], rtol=1e-6
    )
    # no line named after the raw tags, none for the evaluation_*_vs_iterations copies
    keys = set(store.steps) | set(store.epochs) | set(store.running)
    assert not any(k.startswith(("batch_", "epoch_", "train/", "validation/")) for k in keys)
    assert not any("evaluation" in k for k in keys)


def test_zoomed_in_points_are_the_batches_own_values_too(keras_run):
    run_dir, seen = keras_run
    feed = FolderFeed(run_dir)
    while feed.read().more:
        pass
    cols = feed.read_steps(7, 12)["loss"]  # across the end of epoch 1 (step 10)
    np.testing.assert_array_equal(cols.steps, np.arange(7, 13))
    np.testing.assert_allclose(cols.values, _deaveraged(seen["running"])[6:12], rtol=1e-12)


def test_the_folder_is_one_run_named_after_it(keras_run):
    run_dir, _ = keras_run
    assert load_folder(run_dir).name == "adam-small"
    assert [r.name for r in list_runs(run_dir.parent)] == ["adam-small"]
    # its log_dir given as the runs folder: the one run, not "train" and "validation"
    assert [r.path for r in list_runs(run_dir)] == [run_dir]
    from tfstudio.core.keras_folders import run_of

    assert run_of(run_dir / "train") == run_dir
    assert run_of(run_dir / "validation") == run_dir
    assert run_of(run_dir) == run_dir


def test_its_histograms_are_named_variables_with_figures(keras_run):
    run_dir, _ = keras_run
    reader = RunReader(run_dir)
    reader.update()
    events = inspector_events(reader.scalars, reader.histograms, {})
    weights = [e for e in events if type(e).__name__ == "WeightStats"]
    # one sample per epoch, at the step where it was taken (the epoch's end)
    assert [w.step for w in weights] == [STEPS * (e + 1) for e in range(EPOCHS)]
    for w in weights:
        paths = {v.path for v in w.variables}
        assert paths == {
            "tiny/hidden/kernel",
            "tiny/hidden/bias",
            "tiny/out/kernel",
            "tiny/out/bias",
        }
        sizes = {"tiny/hidden/kernel": 12, "tiny/hidden/bias": 3, "tiny/out/kernel": 3}
        for v in w.variables:
            assert sum(v.hist) == sizes.get(v.path, 1), v.path  # every value counted
            assert v.min <= v.mean <= v.max
            for figure in (v.mean, v.std, v.norm):
                assert not math.isnan(figure), v
            # the norm of what the buckets count: between the sizes the values allow
            biggest = max(abs(v.min), abs(v.max))
            assert v.norm <= biggest * sum(v.hist) ** 0.5 + 1e-6
        kernel = next(v for v in w.variables if v.path == "tiny/hidden/kernel")
        assert kernel.norm > 0
