"""Every model.fit an unmodified script makes is monitored: steps, epochs, segments."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from tests.engine.helpers import console, of, run_script
from tfstudio.core.events import EpochEnded, FitEnded, FitStarted, RunEnded, StepEnded
from tfstudio.core.options import RunOptions

pytestmark = pytest.mark.tf


def test_per_step_loss_is_the_batch_own_loss(write_script, tmp_path):
    # lr=0 freezes the weights, so each batch's true loss can be recomputed afterwards.
    # 100 samples / batch 32 leaves a partial last batch of 4 (weighted by samples).
    path = write_script(
        """
        import numpy as np, keras
        rng = np.random.default_rng(0)
        x = rng.normal(size=(100, 3)).astype("float32")
        y = rng.normal(size=(100, 1)).astype("float32")
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(learning_rate=0.0), "mse", metrics=["mae"])
        model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
        np.save("x.npy", x); np.save("y.npy", y); np.save("pred.npy", model.predict(x, verbose=0))
        """
    )
    ended, events = run_script(path, cwd=tmp_path)
    assert ended.status == "finished", console(events)
    steps = of(events, StepEnded)
    assert [s.global_step for s in steps] == list(range(1, 9))
    assert [s.step for s in steps[:4]] == [1, 2, 3, 4]
    assert [s.epoch for s in steps] == [0] * 4 + [1] * 4
    y, pred = np.load(tmp_path / "y.npy"), np.load(tmp_path / "pred.npy")
    bounds = [(0, 32), (32, 64), (64, 96), (96, 100)]
    want_loss = [float(np.mean((pred[a:b] - y[a:b]) ** 2)) for a, b in bounds]
    want_mae = [float(np.mean(np.abs(pred[a:b] - y[a:b]))) for a, b in bounds]
    for s, loss, mae in zip(steps[4:], want_loss, want_mae, strict=True):
        assert s.values["loss"] == pytest.approx(loss, rel=1e-3)
        assert s.values["mae"] == pytest.approx(mae, rel=1e-3)
    # running means are what Keras reported: the last one is the epoch mean
    epoch_end = of(events, EpochEnded)[1]
    assert steps[-1].running["loss"] == pytest.approx(epoch_end.metrics["loss"])
    assert epoch_end.metrics["loss"] == pytest.approx(float(np.mean((pred - y) ** 2)), rel=1e-4)


def test_a_multi_output_models_metrics_per_step_are_the_batch_own(write_script, tmp_path):
    """Keras logs an output's metric as "<output>_<metric>" (reg_mae): a running mean, whose
    batch values are derived like the loss's, not passed on as if they were per batch."""
    path = write_script(
        """
        import numpy as np, keras
        rng = np.random.default_rng(0)
        x = rng.normal(size=(96, 3)).astype("float32")
        y = rng.normal(size=(96, 1)).astype("float32")
        i = keras.Input((3,))
        m = keras.Model(i, {"reg": keras.layers.Dense(1, name="reg")(i),
                            "aux": keras.layers.Dense(1, name="aux")(i)})
        m.compile(keras.optimizers.SGD(learning_rate=0.0), {"reg": "mse", "aux": "mse"},
                  metrics={"reg": ["mae"], "aux": ["mae"]})
        m.fit(x, {"reg": y, "aux": y}, batch_size=32, epochs=1, shuffle=False, verbose=0)
        np.save("y.npy", y); np.save("pred.npy", m.predict(x, verbose=0)["reg"])
        """
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector=False))
    assert ended.status == "finished", console(events)
    steps = of(events, StepEnded)
    y, pred = np.load(tmp_path / "y.npy"), np.load(tmp_path / "pred.npy")
    want = [float(np.mean(np.abs(pred[a : a + 32] - y[a : a + 32]))) for a in (0, 32, 64)]
    assert [s.values["reg_mae"] for s in steps] == pytest.approx(want, rel=1e-3)
    assert steps[-1].running["reg_mae"] == pytest.approx(float(np.mean(np.abs(pred - y))))


def test_class_weights_leave_plain_metrics_per_step_and_weighted_ones_running(
    write_script, tmp_path
):
    """With class_weight a `weighted_metrics` mean counts weights, not samples: its
    batch's own value cannot come from the logs, so only its running value is sent (it
    had been derived as if by samples: 0.522 for a batch whose weighted accuracy was
    0.568). A plain `metrics=` accuracy ignores the weights: still exact per step."""
    path = write_script(
        """
        import numpy as np, keras
        rng = np.random.default_rng(0)
        x = rng.normal(size=(256, 4)).astype("float32")
        y = (x[:, 0] + 0.3 * x[:, 1] > 0.8).astype("int64")  # ~20% ones, weighted 5x
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        m.compile(keras.optimizers.SGD(0.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"],
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="wacc")])
        m.fit(x, y, batch_size=32, epochs=1, shuffle=False, class_weight={0: 1.0, 1: 5.0},
              verbose=0)
        np.save("y.npy", y); np.save("pred.npy", m.predict(x, verbose=0))
        """
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector=False))
    assert ended.status == "finished", console(events)
    steps = of(events, StepEnded)
    y, pred = np.load(tmp_path / "y.npy"), np.load(tmp_path / "pred.npy")
    hit = (pred.argmax(axis=1) == y).astype(float)
    w = np.where(y == 1, 5.0, 1.0)
    top = pred.max(axis=1)
    ce = top + np.log(np.exp(pred - top[:, None]).sum(axis=1)) - pred[np.arange(len(y)), y]
    assert len(steps) == 8
    for k, s in enumerate(steps):
        a, b = 32 * k, 32 * (k + 1)
        assert s.values["accuracy"] == pytest.approx(hit[a:b].mean(), abs=1e-5)
        # the loss tracker counts samples: the batch's weighted loss is derived exactly
        assert s.values["loss"] == pytest.approx(float((w * ce)[a:b].mean()), rel=1e-4)
        assert "wacc" not in s.values  # no batch value to give
        want = float((hit[:b] * w[:b]).sum() / w[:b].sum())  # weighted, since the epoch began
        assert s.running["wacc"] == pytest.approx(want, rel=1e-5)


def test_a_masked_sequence_models_metrics_are_running_its_loss_per_step(write_script, tmp_path):
    """Padded sequences (Embedding(mask_zero=True)): a compiled metric counts the unmasked
    share of each batch (20.9, 19.75, ... for 32 samples), so its batch's own value cannot
    be derived; the loss tracker counts samples, so the loss still is, exactly."""
    path = write_script(
        """
        import numpy as np, keras
        rng = np.random.default_rng(0)
        n, T = 128, 12
        x = np.zeros((n, T), "int64"); y = np.zeros((n, T), "int64")
        for i, L in enumerate(rng.integers(3, T + 1, size=n)):
            x[i, :L] = rng.integers(1, 50, size=L); y[i, :L] = x[i, :L] % 3
        m = keras.Sequential([keras.Input((T,), dtype="int64"),
                              keras.layers.Embedding(50, 8, mask_zero=True),
                              keras.layers.GRU(8, return_sequences=True), keras.layers.Dense(3)])
        m.compile(keras.optimizers.SGD(0.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
        m.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
        want = [m.evaluate(x[a:a + 32], y[a:a + 32], batch_size=32, verbose=0, return_dict=True)
                for a in range(0, n, 32)]
        seen = [m.evaluate(x[:b], y[:b], batch_size=32, verbose=0, return_dict=True)
                for b in range(32, n + 1, 32)]
        np.save("want.npy", [[w["loss"], s["accuracy"]] for w, s in zip(want, seen)])
        """
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector=False))
    assert ended.status == "finished", console(events)
    steps = of(events, StepEnded)
    want = np.load(tmp_path / "want.npy")
    assert len(steps) == len(want) == 4
    for s, (loss, running_acc) in zip(steps, want, strict=True):
        assert s.values["loss"] == pytest.approx(loss, rel=1e-4)
        assert "accuracy" not in s.values  # no batch value to give
        assert s.running["accuracy"] == pytest.approx(running_acc, rel=1e-4)


def test_a_train_step_returning_a_trackers_running_mean_as_loss_gets_batch_values(
    write_script, tmp_path
):
    """The Keras VAE example returns its `total_loss` tracker's result as "loss": a
    running mean under a name no metric has. It was plotted as the batch's own value
    (a smooth curve labelled per step); its batch values are now derived, told apart at
    the second batch. A raw value returned beside it stays as it came."""
    path = write_script(
        """
        import numpy as np, keras, tensorflow as tf
        rng = np.random.default_rng(0)
        x = rng.normal(size=(128, 4)).astype("float32")

        class AE(keras.Model):
            def __init__(self):
                super().__init__()
                self.enc = keras.layers.Dense(2)
                self.dec = keras.layers.Dense(4)
                self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
                self.rec_tracker = keras.metrics.Mean(name="reconstruction_loss")

            @property
            def metrics(self):
                return [self.total_loss_tracker, self.rec_tracker]

            def call(self, x):
                return self.dec(self.enc(x))

            def train_step(self, data):
                with tf.GradientTape() as tape:
                    rec = tf.reduce_mean(tf.square(self(data) - data))
                    total = rec + 0.1
                grads = tape.gradient(total, self.trainable_weights)
                self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
                self.total_loss_tracker.update_state(total)
                self.rec_tracker.update_state(rec)
                return {"loss": self.total_loss_tracker.result(),
                        "reconstruction_loss": self.rec_tracker.result(),
                        "raw_total": total}

        m = AE()
        m.compile(keras.optimizers.SGD(0.0))
        m.fit(x, batch_size=32, epochs=1, shuffle=False, verbose=0)
        out = m.predict(x, verbose=0)
        want = [np.mean((out[a : a + 32] - x[a : a + 32]) ** 2) for a in range(0, 128, 32)]
        np.save("want.npy", want)
        """
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector=False))
    assert ended.status == "finished", console(events)
    steps = of(events, StepEnded)
    want = np.load(tmp_path / "want.npy")
    assert len(steps) == 4
    for s, rec in zip(steps, want, strict=True):
        assert s.values["reconstruction_loss"] == pytest.approx(rec, rel=1e-4)
        assert s.values["loss"] == pytest.approx(rec + 0.1, rel=1e-4)  # the batch's own
        assert s.values["raw_total"] == pytest.approx(rec + 0.1, rel=1e-4)  # as it came
    assert steps[-1].running["loss"] == pytest.approx(float(np.mean(want)) + 0.1, rel=1e-4)


def test_a_train_steps_own_trackers_counting_in_other_units_are_exact_at_a_partial_batch(
    write_script, tmp_path
):
    """The Keras guide's custom train_step: a `loss` tracker updated once a batch (it
    counts batches) beside a MAE metric (it counts samples). An epoch's partial last
    batch (4 of 100 samples) weighs 1 for the one and 4/32 of a batch for the other:
    each mean is derived with its own count there (the MAE's had been off)."""
    path = write_script(
        """
        import numpy as np, keras, tensorflow as tf
        rng = np.random.default_rng(0)
        x = rng.normal(size=(100, 3)).astype("float32")
        y = rng.normal(size=(100, 1)).astype("float32")

        class Custom(keras.Model):
            def __init__(self):
                super().__init__()
                self.dense = keras.layers.Dense(1)
                self.loss_tracker = keras.metrics.Mean(name="loss")
                self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")

            def call(self, x):
                return self.dense(x)

            @property
            def metrics(self):
                return [self.loss_tracker, self.mae_metric]

            def train_step(self, data):
                xb, yb = data
                with tf.GradientTape() as tape:
                    pred = self(xb, training=True)
                    loss = tf.reduce_mean(tf.square(pred - yb))
                grads = tape.gradient(loss, self.trainable_weights)
                self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
                self.loss_tracker.update_state(loss)
                self.mae_metric.update_state(yb, pred)
                return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        m = Custom()
        m.compile(keras.optimizers.SGD(0.0))
        m.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
        np.save("y.npy", y); np.save("pred.npy", m.predict(x, verbose=0))
        """
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector=False))
    assert ended.status == "finished", console(events)
    steps = of(events, StepEnded)
    y, pred = np.load(tmp_path / "y.npy"), np.load(tmp_path / "pred.npy")
    bounds = [(0, 32), (32, 64), (64, 96), (96, 100)]
    assert len(steps) == 8
    for s, (a, b) in zip(steps, bounds * 2, strict=True):
        err = pred[a:b] - y[a:b]
        assert s.values["loss"] == pytest.approx(float(np.mean(err**2)), rel=1e-4)
        assert s.values["mae"] == pytest.approx(float(np.mean(np.abs(err))), rel=1e-4)


def test_a_key_a_train_step_starts_returning_mid_epoch_leaves_the_others_exact(
    write_script, tmp_path
):
    """An eager train_step that returns one more value from its third batch on (and
    means counting in units of their own): every batch's loss and MAE stay its own, the
    new value comes as it is from its first batch, none before."""
    path = write_script(
        """
        import numpy as np, keras, tensorflow as tf
        rng = np.random.default_rng(1)
        x = rng.normal(size=(80, 3)).astype("float32")
        y = rng.normal(size=(80, 1)).astype("float32")

        class Custom(keras.Model):
            def __init__(self):
                super().__init__()
                self.dense = keras.layers.Dense(1)
                self.loss_tracker = keras.metrics.Mean(name="loss")
                self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
                self.seen = 0

            def call(self, x):
                return self.dense(x)

            @property
            def metrics(self):
                return [self.loss_tracker, self.mae_metric]

            def train_step(self, data):
                xb, yb = data
                with tf.GradientTape() as tape:
                    pred = self(xb, training=True)
                    loss = tf.reduce_mean(tf.square(pred - yb))
                grads = tape.gradient(loss, self.trainable_weights)
                self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
                self.loss_tracker.update_state(loss)
                self.mae_metric.update_state(yb, pred)
                self.seen += 1
                out = {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}
                if self.seen >= 3:
                    out["extra"] = float(self.seen)
                return out

        m = Custom()
        m.compile(keras.optimizers.SGD(0.0), run_eagerly=True)
        m.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        np.save("y.npy", y); np.save("pred.npy", m.predict(x, verbose=0))
        """
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector=False))
    assert ended.status == "finished", console(events)
    steps = of(events, StepEnded)
    y, pred = np.load(tmp_path / "y.npy"), np.load(tmp_path / "pred.npy")
    assert [s.step for s in steps] == [1, 2, 3, 4, 5]
    for k, s in enumerate(steps):
        err = pred[16 * k : 16 * (k + 1)] - y[16 * k : 16 * (k + 1)]
        assert s.values["loss"] == pytest.approx(float(np.mean(err**2)), rel=1e-4)
        assert s.values["mae"] == pytest.approx(float(np.mean(np.abs(err))), rel=1e-4)
    assert [s.values.get("extra") for s in steps] == [None, None, 3.0, 4.0, 5.0]


def test_two_fits_and_a_custom_train_step_gan_are_segments(write_script):
    path = write_script(
        """
        import numpy as np, keras, tensorflow as tf

        x = np.random.default_rng(1).normal(size=(64, 4)).astype("float32")
        y = (x.sum(axis=1) > 0).astype("float32")
        clf = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
        clf.compile("adam", "binary_crossentropy", metrics=["accuracy", keras.metrics.AUC()])
        clf.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_split=0.25)

        class GAN(keras.Model):
            def __init__(self):
                super().__init__()
                self.gen = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4)])
                self.disc = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
                self.d_tracker = keras.metrics.Mean(name="d_loss")
                self.g_tracker = keras.metrics.Mean(name="g_loss")

            def compile(self, d_opt, g_opt):
                super().compile()
                self.d_opt, self.g_opt = d_opt, g_opt

            @property
            def metrics(self):
                return [self.d_tracker, self.g_tracker]

            def train_step(self, real):
                noise = tf.random.normal((tf.shape(real)[0], 2))
                bce = keras.losses.BinaryCrossentropy(from_logits=True)
                with tf.GradientTape() as tape:
                    fake = self.gen(noise)
                    d_loss = bce(tf.ones_like(real[:, :1]), self.disc(real)) + bce(
                        tf.zeros_like(real[:, :1]), self.disc(fake))
                grads = tape.gradient(d_loss, self.disc.trainable_weights)
                self.d_opt.apply_gradients(zip(grads, self.disc.trainable_weights))
                with tf.GradientTape() as tape:
                    g_loss = bce(tf.ones_like(real[:, :1]), self.disc(self.gen(noise)))
                grads = tape.gradient(g_loss, self.gen.trainable_weights)
                self.g_opt.apply_gradients(zip(grads, self.gen.trainable_weights))
                self.d_tracker.update_state(d_loss)
                self.g_tracker.update_state(g_loss)
                return {"d_loss": self.d_tracker.result(), "g_loss": self.g_tracker.result()}

        gan = GAN()
        gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
        gan.fit(tf.data.Dataset.from_tensor_slices(x).batch(16), epochs=1, verbose=0)
        print("script went on after both fits")
        """
    )
    ended, events = run_script(path)
    assert ended.status == "finished", console(events)
    assert ended.fits == 2
    starts = of(events, FitStarted)
    assert [f.fit_index for f in starts] == [0, 1]
    assert starts[0].model.class_name == "Sequential"
    assert starts[0].model.total_params == 5
    assert starts[0].steps_per_epoch == 3 and starts[0].epochs == 2
    assert starts[1].model.class_name == "GAN"
    assert starts[1].global_step == 6  # the second segment continues the step axis
    steps = of(events, StepEnded)
    first = [s for s in steps if s.fit_index == 0]
    second = [s for s in steps if s.fit_index == 1]
    assert [s.global_step for s in first] == list(range(1, 7))
    assert [s.global_step for s in second] == [7, 8, 9, 10]
    # AUC is stateful: no per-batch value, only the running one
    assert "auc" in first[0].running and "auc" not in first[0].values
    assert set(first[0].values) == {"loss", "accuracy"}
    assert set(second[0].values) == {"d_loss", "g_loss"} and "loss" not in second[0].running
    val = of(events, EpochEnded)[0].metrics
    assert {"val_loss", "val_accuracy", "val_auc"} <= set(val)
    assert [e.stopped for e in of(events, FitEnded)] == [False, False]
    assert "script went on after both fits" in console(events, "stdout")


def test_steps_per_execution_reports_every_n_steps(write_script):
    path = write_script(
        """
        import numpy as np, keras
        x = np.zeros((90, 2), "float32"); y = np.zeros((90, 1), "float32")
        m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse", steps_per_execution=4)
        m.fit(x, y, batch_size=10, epochs=1, verbose=0)
        """
    )
    ended, events = run_script(path)
    assert ended.status == "finished", console(events)
    assert of(events, FitStarted)[0].steps_per_execution == 4
    steps = of(events, StepEnded)
    # 9 batches: hooks after 4, 8 and the last 1 (never past the epoch's end)
    assert [(s.step, s.steps) for s in steps] == [(4, 4), (8, 4), (9, 1)]
    assert steps[-1].global_step == 9


def test_a_fit_a_callback_ends_early_says_why(write_script):
    """EarlyStopping (verbose=0, its default) ends a fit in silence: the console says why."""
    path = write_script(
        """
        import numpy as np, keras
        x = np.zeros((40, 2), "float32"); y = np.zeros((40, 1), "float32")
        m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        never = keras.callbacks.EarlyStopping(
            monitor="loss", patience=1, min_delta=1e9, restore_best_weights=True
        )
        m.fit(x, y, batch_size=10, epochs=5, verbose=0, callbacks=[never])

        class Quit(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                self.model.stop_training = True
        m.fit(x, y, batch_size=10, epochs=3, verbose=0, callbacks=[Quit()])
        m.fit(x, y, batch_size=10, epochs=2, verbose=0, callbacks=[never])  # patience 1: 2 run
        """
    )
    ended, events = run_script(path, options=RunOptions(inspector=False))
    assert ended.status == "finished", console(events)
    notes = [line for line in console(events, "tfstudio").splitlines() if "ended after" in line]
    assert notes == [
        "Fit 1 ended after epoch 2 of 5: EarlyStopping saw loss not improve for 1 epoch "
        "(best 0 at epoch 1); the model now holds epoch 1's weights.",
        "Fit 2 ended after epoch 1 of 3: model.stop_training was set "
        "(by one of its callbacks: Quit).",
    ]


def test_fit_is_restored_after_the_run(write_script):
    original = keras.Model.fit
    ended, _ = run_script(write_script("import keras\nprint(keras.Model.fit.__name__)\n"))
    assert ended.status == "finished"
    assert keras.Model.fit is original
    assert not hasattr(keras.Model.fit, "__tfstudio_wrapped__")


def test_error_in_tfstudio_callback_is_reported_and_training_goes_on(write_script, monkeypatch):
    from tfstudio.core.events import MonitorError
    from tfstudio.engine.callback import StudioCallback

    def broken(self, k, logs):
        raise RuntimeError("probe exploded")

    monkeypatch.setattr(StudioCallback, "_settle", broken)
    path = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        h = m.fit(np.zeros((40, 2)), np.zeros((40, 1)), batch_size=10, epochs=2, verbose=0)
        print("epochs trained:", len(h.history["loss"]))
        """
    )
    ended, events = run_script(path)
    assert ended.status == "finished"
    errors = of(events, MonitorError)
    assert len(errors) == 1 and "probe exploded" in errors[0].message  # reported once
    assert "epochs trained: 2" in console(events, "stdout")
    assert of(events, EpochEnded)  # the rest of the monitoring still works


def test_error_in_user_callback_fails_the_run_with_its_traceback(write_script):
    path = write_script(
        """
        import numpy as np, keras

        class Bad(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                raise ValueError("user callback is broken")

        m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        m.fit(np.zeros((20, 2)), np.zeros((20, 1)), epochs=1, verbose=0, callbacks=[Bad()])
        """
    )
    ended, events = run_script(path)
    assert ended.status == "failed" and ended.exit_code == 1
    assert ended.error.type_name == "ValueError"
    assert ended.error.lineno == 6  # the raise in the user's callback
    assert "user callback is broken" in console(events, "stderr")
    assert isinstance(events[-1], RunEnded)


def test_tf_print_and_cpp_output_reach_the_console(write_script):
    path = write_script(
        """
        import os, tensorflow as tf
        print("from python")
        import sys
        sys.stdout.buffer.write("bytes \u00e9\\n".encode())
        sys.stdout.flush()
        tf.print("from tf.print")
        os.write(1, b"raw fd one\\n")
        os.write(2, b"raw fd two\\n")
        """
    )
    ended, events = run_script(path)
    assert ended.status == "finished"
    assert "from python" in console(events, "stdout")
    assert "bytes \u00e9" in console(events, "stdout")
    assert "from tf.print" in console(events, "stderr")
    assert "raw fd one" in console(events, "stdout")
    assert "raw fd two" in console(events, "stderr")
