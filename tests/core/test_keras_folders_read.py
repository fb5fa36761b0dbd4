"""A Keras ``TensorBoard`` folder read chunk by chunk (no TensorFlow: its records written
by hand, as Keras lays them out): batch running means back to each batch's own value
across reads, epoch values at their epochs' ends, what is not a mean kept running."""

from __future__ import annotations

import numpy as np

from tests.core.tfevents import EventWriter
from tfstudio.core.run_loading import FolderFeed
from tfstudio.core.run_store import EPOCH, RUNNING, STEP, RunStore

EPOCHS, STEPS = 3, 7


def _write(run, batches: bool = True, seed: int = 0, follow=None) -> np.ndarray:
    """Keras's layout: train/batch_* running means at batch steps 1.., epoch_* at epoch
    numbers, validation/evaluation_*_vs_iterations then epoch_*; returns each batch's own
    loss. ``follow``: called after every few records (a viewer reading on as it grows)."""
    rng = np.random.default_rng(seed)
    own = rng.uniform(0.2, 1.0, size=EPOCHS * STEPS).astype(np.float32)
    train, val = EventWriter(run / "train"), EventWriter(run / "validation")
    wall = 1000.0
    for e in range(EPOCHS):
        block = own[e * STEPS : (e + 1) * STEPS].astype(np.float64)
        for k in range(1, STEPS + 1):
            step = e * STEPS + k
            wall += 0.01
            if batches:
                train.add("batch_loss", step, float(block[:k].mean()), wall)
                train.add("batch_auc", step, 0.5 + 0.01 * step, wall)
            if follow is not None and step % 3 == 0:
                follow()
        wall += 0.01
        val.add("evaluation_loss_vs_iterations", (e + 1) * STEPS, 0.9 - e / 10, wall)
        wall += 0.01
        train.add("epoch_loss", e, float(block.mean()), wall)
        train.add("epoch_learning_rate", e, 0.001, wall)
        val.add("epoch_loss", e, 0.9 - e / 10, wall)
        if follow is not None:
            follow()
    train.close()
    val.close()
    return own


class _Follower:
    """Reads a folder as it is written: a read after every few records (as a followed run
    is read), applying each batch to one store."""

    def __init__(self, run) -> None:
        self.feed: FolderFeed | None = None
        self.run = run
        self.store = RunStore(run.name)
        self.batches: list = []

    def __call__(self) -> None:
        if self.feed is None:
            self.feed = FolderFeed(self.run, chunk_bytes=200)
        while True:
            batch = self.feed.read()
            self.batches.append(batch)
            batch.apply(self.store)
            if not batch.more:
                return


def _read(run, follow: bool = True) -> tuple[RunStore, list, np.ndarray]:
    follower = _Follower(run)
    own = _write(run, follow=follower if follow else None)
    follower()
    return follower.store, follower.batches, own


def test_batch_values_read_in_small_pieces_are_each_batchs_own(tmp_path):
    store, batches, own = _read(tmp_path / "keras")  # read on every few records
    assert len(batches) > 10
    loss = store.steps["loss"]
    assert loss.kind == STEP
    xs, ys = loss.points()
    np.testing.assert_array_equal(xs, np.arange(1, EPOCHS * STEPS + 1))
    np.testing.assert_allclose(ys, own, rtol=0, atol=2e-6)  # float32 running means
    # AUC is no mean: its running value is drawn as it came
    auc = store.running["auc"]
    assert auc.kind == RUNNING
    np.testing.assert_allclose(auc.points()[1], 0.5 + 0.01 * xs, atol=1e-6)
    # every read's overview left Keras's running means out (they are no own values)
    assert not any(key == "loss" for b in batches for key, _, _ in b.overview)


def test_epoch_values_land_where_their_epoch_ended(tmp_path):
    store, _, own = _read(tmp_path / "keras")
    ends = [float(STEPS * (e + 1)) for e in range(EPOCHS)]
    assert store.epoch_steps == ends
    xs, ys = store.epochs["loss"].points()
    assert store.epochs["loss"].kind == EPOCH and xs.tolist() == ends
    np.testing.assert_allclose(ys, own.reshape(EPOCHS, STEPS).mean(axis=1), rtol=1e-6)
    assert store.epochs["val_loss"].points()[0].tolist() == ends
    assert store.steps["learning_rate"].points()[0][:1].tolist() == [STEPS]


def test_without_batch_values_the_validation_iterations_place_the_epochs(tmp_path):
    run = tmp_path / "keras"
    _write(run, batches=False)  # update_freq="epoch"
    store = _Follower(run)
    store()
    store = store.store
    ends = [float(STEPS * (e + 1)) for e in range(EPOCHS)]
    assert store.epochs["loss"].points()[0].tolist() == ends
    assert store.epochs["val_loss"].points()[0].tolist() == ends
    assert "loss" not in store.steps


def _two_fits(run) -> tuple[np.ndarray, list[float]]:
    """Two fits written to one log_dir, 2 epochs of 4 batches each: Keras restarts its
    batch count at 1 for the second; the optimizer's iterations (validation's
    evaluation_*_vs_iterations) go on. Returns the batches' own losses (fit, epoch, batch)
    and the wall times the epochs' values were written at."""
    rng = np.random.default_rng(1)
    own = rng.uniform(0.2, 1.0, size=(2, 2, 4)).astype(np.float32)
    train, val = EventWriter(run / "train"), EventWriter(run / "validation")
    wall, iterations, epoch_walls = 1000.0, 0, []
    for fit in range(2):
        for e in range(2):
            for k in range(1, 5):
                wall += 0.01
                iterations += 1
                train.add("batch_loss", e * 4 + k, float(own[fit, e, :k].mean()), wall)
            wall += 0.01
            val.add("evaluation_loss_vs_iterations", iterations, 0.5, wall)
            wall += 0.01
            train.add("epoch_loss", e, float(own[fit, e].mean()), wall)
            val.add("epoch_loss", e, 0.5, wall)
            epoch_walls.append(wall)
    train.close()
    val.close()
    return own, epoch_walls


def test_a_second_fit_goes_on_from_where_the_first_ended(tmp_path):
    run = tmp_path / "keras"
    own, _ = _two_fits(run)
    follower = _Follower(run)
    follower()
    store = follower.store
    xs, ys = store.steps["loss"].points()
    np.testing.assert_array_equal(xs, np.arange(1, 17))
    np.testing.assert_allclose(ys, own.ravel(), atol=2e-6)
    ends = [4.0, 8.0, 12.0, 16.0]
    assert store.epochs["loss"].points()[0].tolist() == ends
    assert store.epochs["val_loss"].points()[0].tolist() == ends
    # zoomed in across the second fit's start: the same values, at the same steps
    cols = follower.feed.read_steps(7, 10)["loss"]
    np.testing.assert_array_equal(cols.steps, [7, 8, 9, 10])
    np.testing.assert_allclose(cols.values, own.ravel()[6:10], atol=2e-6)


def test_a_second_fits_histograms_go_to_its_own_epochs(tmp_path):
    from tfstudio.core.keras_folders import histogram_steps
    from tfstudio.core.runs import read_scalars

    run = tmp_path / "keras"
    _, epoch_walls = _two_fits(run)
    place = histogram_steps(read_scalars(run))
    # Keras writes an epoch's histograms (at its epoch number) just after its values
    assert [place(e % 2, w + 0.001) for e, w in enumerate(epoch_walls)] == [4, 8, 12, 16]
    assert histogram_steps(read_scalars(tmp_path / "none")) is None  # not a Keras folder
