"""The inspector: model tree, weight stats, gradient norms and layer outputs of real fits.

Every model trains with SGD at learning rate 0 on one batch of 16 samples, so
its weights, the gradient of every step and its layer outputs stay what the
script computes directly afterwards (``layer(x)`` on the probe batch,
``tf.GradientTape`` on the same batch and weights); the inspector's numbers
from the run are checked against those.
"""

from __future__ import annotations

import pickle
import textwrap

import numpy as np
import pytest

from tests.engine.helpers import console, of, run_script
from tfstudio.core.events import (
    GradientStats,
    InspectorStatus,
    LayerOutputs,
    ModelTree,
    MonitorError,
    WeightStats,
)
from tfstudio.core.options import RunOptions
from tfstudio.core.resources import resources_dir

pytestmark = pytest.mark.tf
EXAMPLES = resources_dir() / "examples"

PRELUDE = """
import pickle
import numpy as np, keras, tensorflow as tf
from keras import layers
rng = np.random.default_rng(0)
x = rng.normal(size=(16, 4)).astype("float32")
y = rng.normal(size=(16, 2)).astype("float32")
p = x[:8]  # the probe batch: first 8 samples of the first batch
mse = keras.losses.MeanSquaredError()

def dump(model, loss_fn, variables, outputs):
    with tf.GradientTape() as tape:
        loss = loss_fn()
    grads = tape.gradient(loss, variables)
    pickle.dump({
        "weights": {v.path: v.numpy() for v in model.trainable_variables},
        "grads": {v.path: g.numpy() for v, g in zip(variables, grads)},
        "outputs": {k: np.asarray(v) for k, v in outputs.items()},
    }, open("expect.pkl", "wb"))
"""


def _run(write_script, tmp_path, body: str, every: int = 1):
    path = write_script(PRELUDE + textwrap.dedent(body))
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(sample_every=every))
    assert ended.status == "finished", console(events)
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    expect = pickle.load(open(tmp_path / "expect.pkl", "rb"))
    return events, expect


def _check(events, expect, every_layer: set[str]):
    """Last weight/gradient/output events agree with the script's direct computation."""
    weights = of(events, WeightStats)[-1]
    by_path = {v.path: v for v in weights.variables}
    assert set(by_path) == set(expect["weights"])
    for path, w in expect["weights"].items():
        got = by_path[path]
        assert got.shape == w.shape
        np.testing.assert_allclose(
            [got.mean, got.std, got.min, got.max, got.norm],
            [w.mean(), w.std(), w.min(), w.max(), np.linalg.norm(w)],
            rtol=1e-4,
            atol=1e-6,
        )
        assert got.zero_fraction == pytest.approx(np.mean(w == 0))
        assert sum(got.hist) == w.size
        if w.size <= 16:
            np.testing.assert_allclose(got.values, w.reshape(-1), rtol=1e-6)
        else:
            assert got.values == ()
    grads = of(events, GradientStats)[-1]
    gby = {g.path: g for g in grads.variables}
    assert set(gby) == set(expect["grads"])
    for path, g in expect["grads"].items():
        got = gby[path]
        assert got.norm == pytest.approx(float(np.linalg.norm(g)), rel=1e-4, abs=1e-7)
        assert got.min == pytest.approx(float(g.min()), rel=1e-4, abs=1e-7)
        assert got.max == pytest.approx(float(g.max()), rel=1e-4, abs=1e-7)
        assert sum(got.hist) == g.size
    squares = [float(np.sum(g.astype(np.float64) ** 2)) for g in expect["grads"].values()]
    want_global = np.sqrt(sum(squares))
    assert grads.global_norm == pytest.approx(want_global, rel=1e-4)
    outputs = of(events, LayerOutputs)[-1]
    assert outputs.samples == 8
    names = [lo.name for lo in outputs.layers]
    assert every_layer <= set(names), names
    assert [lo.index for lo in outputs.layers] == sorted(lo.index for lo in outputs.layers)
    first = {}
    for lo in outputs.layers:
        first.setdefault(lo.name, lo)
    for name, out in expect["outputs"].items():
        got = first[name]
        assert got.shape == out.shape
        np.testing.assert_allclose(
            [got.mean, got.std, got.min, got.max],
            [out.mean(), out.std(), out.min(), out.max()],
            rtol=1e-4,
            atol=1e-6,
        )
        dead = 1.0 - np.any(out.reshape(-1, out.shape[-1]) != 0, axis=0).mean()
        assert got.dead_fraction == pytest.approx(dead)
        assert sum(got.hist) == out.size
    return outputs


def test_sequential(write_script, tmp_path):
    events, expect = _run(
        write_script,
        tmp_path,
        """
        model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu", name="h"),
                                  layers.Dense(2, name="out")], name="seq")
        model.compile(keras.optimizers.SGD(0.0), "mse")
        model.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0)
        h = model.get_layer("h")(p)
        dump(model, lambda: mse(y, model(x, training=True)), model.trainable_variables,
             {"h": h, "out": model.get_layer("out")(h)})
        """,
    )
    outputs = _check(events, expect, {"seq", "h", "out"})
    assert [lo.name for lo in outputs.layers] == ["seq", "h", "out"]  # the forward walk
    assert [lo.depth for lo in outputs.layers] == [0, 1, 1]
    # (N, units) outputs carry a samples x units picture.
    h = outputs.layers[1]
    assert h.matrix_shape == (8, 8) and len(h.matrix) == 64
    tree = of(events, ModelTree)[0]
    assert tree.root.name == "seq" and "Total params" in tree.summary
    dense = [c for c in tree.root.children if c.name == "h"][0]
    assert dense.class_name == "Dense" and dense.trainable_params == 40
    assert dense.output_shape == "(None, 8)" and dense.dtype == "float32"
    assert tree.root.output_shape == "(None, 2)"  # the Sequential's too (not called yet)
    assert [(v.name, v.shape) for v in dense.variables] == [("kernel", (4, 8)), ("bias", (8,))]
    # Sampled every step: 4 fits steps, 4 samples, each with the cadence and its cost.
    assert [w.step for w in of(events, WeightStats)] == [1, 2, 3, 4]
    assert [g.step for g in of(events, GradientStats)] == [1, 2, 3, 4]
    status = of(events, InspectorStatus)  # each sample's, then the fit's end's (its overhead)
    assert [(s.step, s.every) for s in status] == [(1, 1), (2, 1), (3, 1), (4, 1), (4, 1)]
    assert status[-1].mode == "fixed"
    assert status[-1].largest_message > 0 and status[-1].probe_ms > 0


def test_functional_multi_input_multi_output(write_script, tmp_path):
    events, expect = _run(
        write_script,
        tmp_path,
        """
        a_in, b_in = keras.Input((2,), name="a_in"), keras.Input((2,), name="b_in")
        joined = layers.Concatenate(name="join")([a_in, b_in])
        h = layers.Dense(6, activation="tanh", name="h")(joined)
        out1 = layers.Dense(1, name="out1")(h)
        out2 = layers.Dense(3, name="out2")(h)
        model = keras.Model([a_in, b_in], [out1, out2], name="fn")
        model.compile(keras.optimizers.SGD(0.0), loss=["mse", "mse"])
        y1, y2 = y[:, :1], np.concatenate([y, y[:, :1]], axis=1)
        xs = [x[:, :2], x[:, 2:]]
        model.fit(xs, [y1, y2], batch_size=16, epochs=3, shuffle=False, verbose=0)
        j = model.get_layer("join")([p[:, :2], p[:, 2:]])
        hh = model.get_layer("h")(j)
        def loss():
            o1, o2 = model(xs, training=True)
            return mse(y1, o1) + mse(y2, o2)
        dump(model, loss, model.trainable_variables,
             {"join": j, "h": hh, "out1": model.get_layer("out1")(hh),
              "out2": model.get_layer("out2")(hh)})
        """,
    )
    _check(events, expect, {"fn", "join", "h", "out1", "out2"})


def test_subclassed_with_nested_sublayers(write_script, tmp_path):
    events, expect = _run(
        write_script,
        tmp_path,
        """
        class Block(layers.Layer):
            def __init__(self, units, **kw):
                super().__init__(**kw)
                self.d1 = layers.Dense(units, activation="relu", name="d1")
                self.d2 = layers.Dense(units, name="d2")
            def call(self, t):
                return self.d2(self.d1(t))

        class Net(keras.Model):
            def __init__(self):
                super().__init__(name="net")
                self.block = Block(8, name="block")
                self.head = layers.Dense(2, name="head")
            def call(self, t):
                return self.head(self.block(t))

        model = Net()
        model.compile(keras.optimizers.SGD(0.0), "mse")
        model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        d1 = model.block.d1(p)
        d2 = model.block.d2(d1)
        dump(model, lambda: mse(y, model(x, training=True)), model.trainable_variables,
             {"d1": d1, "d2": d2, "block": d2, "head": model.head(d2)})
        """,
    )
    outputs = _check(events, expect, {"net", "block", "d1", "d2", "head"})
    assert [lo.name for lo in outputs.layers] == ["net", "block", "d1", "d2", "head"]
    # The tree was announced again once the first step had built the variables.
    tree = of(events, ModelTree)[-1]
    block = [c for c in tree.root.children if c.name == "block"][0]
    assert [c.name for c in block.children] == ["d1", "d2"]
    assert block.trainable_params == 4 * 8 + 8 + 8 * 8 + 8


def test_custom_train_step(write_script, tmp_path):
    events, expect = _run(
        write_script,
        tmp_path,
        """
        class Custom(keras.Model):
            def train_step(self, data):
                xb, yb = data
                with tf.GradientTape() as tape:
                    loss = 2.0 * tf.reduce_mean(tf.square(self(xb, training=True) - yb))
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
                return {"loss": loss}

        inp = keras.Input((4,))
        h = layers.Dense(5, activation="relu", name="h")(inp)
        model = Custom(inp, layers.Dense(2, name="out")(h), name="custom")
        model.compile(keras.optimizers.SGD(0.0))
        model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        hh = model.get_layer("h")(p)
        loss = lambda: 2.0 * tf.reduce_mean(tf.square(model(x, training=True) - y))
        dump(model, loss, model.trainable_variables, {"h": hh, "out": model.get_layer("out")(hh)})
        """,
    )
    _check(events, expect, {"custom", "h", "out"})


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_gan_two_models_two_optimizers(write_script, tmp_path, optimizer):
    # SGD: the gradients recorded in the step; Adam: derived from each optimizer's state
    # (at learning rate 0 its first moment still takes every step's gradient).
    events, expect = _run(
        write_script,
        tmp_path,
        """
        class GAN(keras.Model):
            def __init__(self):
                super().__init__(name="gan")
                self.generator = keras.Sequential(
                    [keras.Input((4,)), layers.Dense(8, activation="relu", name="g1"),
                     layers.Dense(4, name="g2")], name="generator")
                self.discriminator = keras.Sequential(
                    [keras.Input((4,)), layers.Dense(8, activation="relu", name="d1"),
                     layers.Dense(1, name="d2")], name="discriminator")

            def compile(self, d_opt, g_opt):
                super().compile()
                self.d_opt, self.g_opt = d_opt, g_opt

            def call(self, z):
                return self.discriminator(self.generator(z))

            def d_loss(self, real):
                fake = self.generator(real * 0.5)  # deterministic "noise"
                return (tf.reduce_mean(tf.nn.softplus(-self.discriminator(real)))
                        + tf.reduce_mean(tf.nn.softplus(self.discriminator(fake))))

            def g_loss(self, real):
                fake = self.generator(real * 0.5)
                return tf.reduce_mean(tf.nn.softplus(-self.discriminator(fake)))

            def train_step(self, real):
                d_vars = self.discriminator.trainable_variables
                with tf.GradientTape() as tape:
                    d_loss = self.d_loss(real)
                self.d_opt.apply_gradients(zip(tape.gradient(d_loss, d_vars), d_vars))
                g_vars = self.generator.trainable_variables
                with tf.GradientTape() as tape:
                    g_loss = self.g_loss(real)
                self.g_opt.apply_gradients(zip(tape.gradient(g_loss, g_vars), g_vars))
                return {"d_loss": d_loss, "g_loss": g_loss}

        gan = GAN()
        gan.compile(keras.optimizers.OPT(0.0), keras.optimizers.OPT(0.0))
        gan.fit(x, batch_size=16, epochs=3, shuffle=False, verbose=0)
        d_vars, g_vars = gan.discriminator.trainable_variables, gan.generator.trainable_variables
        with tf.GradientTape() as tape:
            d_loss = gan.d_loss(x)
        d_grads = tape.gradient(d_loss, d_vars)
        g1 = gan.generator.get_layer("g1")(p)
        g2 = gan.generator.get_layer("g2")(g1)
        d1 = gan.discriminator.get_layer("d1")(g2)
        dump(gan, lambda: gan.g_loss(x), g_vars,
             {"g1": g1, "g2": g2, "generator": g2, "d1": d1,
              "d2": gan.discriminator.get_layer("d2")(d1)})
        expect = pickle.load(open("expect.pkl", "rb"))
        expect["grads"].update({v.path: g.numpy() for v, g in zip(d_vars, d_grads)})
        pickle.dump(expect, open("expect.pkl", "wb"))
        """.replace("OPT", optimizer),
    )
    assert [g.step for g in of(events, GradientStats)] == [1, 2, 3]
    _check(events, expect, {"gan", "generator", "g1", "g2", "discriminator", "d1", "d2"})
    tree = of(events, ModelTree)[-1]
    subtrees = {c.name: c for c in tree.root.children}
    assert {"generator", "discriminator"} <= set(subtrees)
    assert [c.name for c in subtrees["generator"].children if c.class_name == "Dense"] == [
        "g1",
        "g2",
    ]


def test_unprobeable_model_is_skipped_with_one_note(write_script, tmp_path):
    path = write_script(
        PRELUDE
        + textwrap.dedent(
            """
            class NeedsScale(keras.Model):
                def __init__(self):
                    super().__init__(name="needs_scale")
                    self.d = layers.Dense(2, name="d")
                def call(self, t, scale):
                    return self.d(t) * scale
                def train_step(self, data):
                    xb, yb = data
                    with tf.GradientTape() as tape:
                        loss = tf.reduce_mean(tf.square(self(xb, scale=2.0) - yb))
                    grads = tape.gradient(loss, self.trainable_variables)
                    self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
                    return {"loss": loss}

            model = NeedsScale()
            model.compile(keras.optimizers.SGD(0.01))
            model.fit(x, y, batch_size=4, epochs=2, verbose=0)
            print("trained", model.d.kernel.shape)
            """
        )
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(sample_every=2))
    assert ended.status == "finished", console(events)
    assert "trained (4, 2)" in console(events, "stdout")
    notes = [line for line in console(events, "tfstudio").splitlines() if "needs_scale" in line]
    assert len(notes) == 1, notes
    assert "cannot be probed" in notes[0] and "NeedsScale" in notes[0]
    assert "scale" in notes[0].split("failed with", 1)[1]  # the error itself, on that line
    assert "Arguments received" not in console(events, "tfstudio")  # not Keras's whole text
    assert "\x1b" not in notes[0]  # nor its bold codes
    assert not of(events, LayerOutputs)
    # Weights and gradients go on.
    assert len(of(events, WeightStats)) >= 4 and len(of(events, GradientStats)) >= 4
    assert {g.path for g in of(events, GradientStats)[-1].variables} == {
        "needs_scale/d/kernel",
        "needs_scale/d/bias",
    }


def test_a_pydataset_fit_probes_its_validation_batch_and_says_so_once(write_script, tmp_path):
    """fit's x a PyDataset (reading a batch would run the script's data code once more):
    the layers are probed with validation_data's first rows, told once for two fits; a
    fit with no validation_data says what its x is."""
    path = write_script(
        PRELUDE
        + textwrap.dedent(
            """
            class Batches(keras.utils.PyDataset):
                def __len__(self):
                    return 2
                def __getitem__(self, i):
                    return x[i * 8 : (i + 1) * 8], y[i * 8 : (i + 1) * 8]

            xv = rng.normal(size=(12, 4)).astype("float32")
            model = keras.Sequential([keras.Input((4,)), layers.Dense(2, name="d1")])
            model.compile(keras.optimizers.SGD(0.0), "mse")
            model.fit(Batches(), validation_data=(xv, y[:12] * 0), epochs=2, verbose=0)
            model.fit(Batches(), validation_data=(xv, y[:12] * 0), epochs=1, verbose=0)
            model.fit(Batches(), epochs=1, verbose=0)
            np.save("d1.npy", model.get_layer("d1")(xv[:8]).numpy())
            """
        )
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(sample_every=1))
    assert ended.status == "finished", console(events)
    notes = console(events, "tfstudio")
    assert notes.count("layer outputs are shown for a validation batch") == 1, notes
    assert "fit's x is a PyDataset (Batches)" in notes
    outputs = [o for o in of(events, LayerOutputs) if o.fit_index in (0, 1)]
    assert outputs and {o.fit_index for o in outputs} == {0, 1}
    want = np.load(tmp_path / "d1.npy")  # learning rate 0: the same weights throughout
    got = {lo.name: lo for lo in outputs[-1].layers}["d1"]
    assert outputs[-1].samples == 8
    np.testing.assert_allclose(
        [got.mean, got.std, got.min, got.max],
        [want.mean(), want.std(), want.min(), want.max()],
        rtol=1e-4,
        atol=1e-6,
    )
    assert not [o for o in of(events, LayerOutputs) if o.fit_index == 2]
    status = [s for s in of(events, InspectorStatus) if s.fit_index == 2]
    assert status and "PyDataset (Batches)" in status[-1].outputs_off
    assert "no validation_data" in status[-1].outputs_off


def test_a_keras_error_is_told_in_one_plain_line():
    """Keras wraps a call's error in several lines with bold codes: the note keeps the error."""
    import keras

    from tfstudio.engine.probes.activations import brief_error

    class NoCall(keras.Model):  # a GAN-style model: train_step calls its parts, no call()
        pass

    with pytest.raises(NotImplementedError) as caught:
        NoCall()(np.zeros((2, 3), "float32"))
    assert "\n" in str(caught.value)  # what Keras gives
    assert brief_error(caught.value) == "Model NoCall does not have a `call()` method implemented."


def test_budget_cadence_spaces_samples_and_reports_overhead(write_script, tmp_path):
    path = write_script(
        PRELUDE
        + """
import time
model = keras.Sequential([keras.Input((4,)), layers.Dense(8), layers.Dense(2)])
model.compile("sgd", "mse")
# 8 ms a step at least, whatever the machine: the fit's ~2.6 s pass the second of
# training the overhead needs (a fast CPU ran the 320 steps in under a second)
slow = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: time.sleep(0.008))
model.fit(x, y, batch_size=2, epochs=40, verbose=0, callbacks=[slow])
"""
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector_budget=0.03))
    assert ended.status == "finished"
    status = of(events, InspectorStatus)
    assert status and all(s.mode == "budget" and s.budget == 0.03 for s in status)
    steps = [w.step for w in of(events, WeightStats)]
    assert steps[0] == 1 and len(steps) < 320 / 2  # far fewer samples than steps
    # said once a second of training backs it (NaN before), never negative; at the fit's
    # end over all of it (a budget may space the last sample early in the fit)
    assert all(s.overhead >= 0 or s.overhead != s.overhead for s in status)
    assert status[-1].step == 320 and 0 <= status[-1].overhead < 1
    # A sample costs milliseconds and a step less: the gap grows past one step.
    assert max(s.every for s in status) > 1


def test_inspector_off_sends_nothing(write_script, tmp_path):
    path = write_script(
        PRELUDE
        + """
model = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=4, epochs=1, verbose=0)
"""
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(inspector=False))
    assert ended.status == "finished"
    assert not of(events, WeightStats) and not of(events, ModelTree)


def test_linear_example_weights_converge_to_3_and_2():
    ended, events = run_script(
        EXAMPLES / "linear_regression.py",
        ["--epochs", "30"],
        options=RunOptions(sample_every=10),
    )
    assert ended.status == "finished", console(events)
    samples = of(events, WeightStats)
    # Keras numbers model names per process ("sequential", "sequential_1", ...).
    first, last = (
        {v.path.split("/", 1)[1]: v.values for v in s.variables} for s in (samples[0], samples[-1])
    )
    assert set(last) == {"line/kernel", "line/bias"}
    (w,), (b,) = last["line/kernel"], last["line/bias"]
    assert w == pytest.approx(3.0, abs=0.15) and b == pytest.approx(2.0, abs=0.1)
    assert abs(first["line/kernel"][0] - 3.0) > 1.0  # it did have to learn


def test_cnn_example_feature_maps():
    ended, events = run_script(
        EXAMPLES / "cnn_shapes.py",
        ["--epochs", "1", "--samples", "96"],
        options=RunOptions(sample_every=2),
    )
    assert ended.status == "finished", console(events)
    layers = {lo.name: lo for lo in of(events, LayerOutputs)[-1].layers}
    assert layers["conv1"].shape == (8, 26, 26, 8)
    conv1 = layers["conv1"]
    assert conv1.thumb_shape == (4, 8, 26, 26) and len(conv1.thumbs) == 4 * 8 * 26 * 26
    assert layers["pool1"].thumb_shape == (4, 8, 13, 13)
    assert layers["conv2"].thumb_shape == (4, 16, 11, 11)
    maps = np.frombuffer(conv1.thumbs, np.uint8).reshape(4, 8, 26, 26)
    live = maps.reshape(32, -1).max(axis=1) > 0
    assert live.any() and (maps.reshape(32, -1).max(axis=1)[live] == 255).all()
    hidden = [lo for lo in layers.values() if lo.class_name == "Dense" and lo.shape == (8, 32)]
    assert hidden[0].matrix_shape == (8, 32)  # names like "dense_3" depend on earlier tests


def test_eager_fit_gets_gradients_and_everything_is_restored_after_fit(write_script, tmp_path):
    path = write_script(
        PRELUDE
        + """
model = keras.Sequential([keras.Input((4,)), layers.Dense(3, name="d")], name="eager")
model.compile(keras.optimizers.SGD(0.0), "mse", run_eagerly=True)
model.fit(x, y[:, :1].repeat(3, axis=1), batch_size=16, epochs=3, shuffle=False, verbose=0)
plain = model.train_function
print("restored", "apply" not in vars(model.optimizer), "call" not in vars(model.layers[0]))
model.fit(x, y[:, :1].repeat(3, axis=1), batch_size=16, epochs=1, shuffle=False, verbose=0)
print("same train function", model.train_function is plain)
"""
    )
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(sample_every=1))
    assert ended.status == "finished", console(events)
    out = console(events, "stdout")
    assert "restored True True" in out and "same train function True" in out
    grads = of(events, GradientStats)
    assert [g.step for g in grads] == [1, 2, 3, 4]
    assert {v.path for v in grads[-1].variables} == {"eager/d/kernel", "eager/d/bias"}
    assert grads[0].global_norm == pytest.approx(grads[-1].global_norm, rel=1e-5)  # lr 0


PROBE_WRITES = """
import json
import numpy as np, keras, tensorflow as tf
from keras import layers

keras.utils.set_random_seed(3)
EAGER_ONLY = {eager_only}

class Counting(layers.Layer):
    def build(self, shape):
        self.calls = self.add_weight(shape=(), initializer="zeros", trainable=False)
        self.noise = keras.random.SeedGenerator(5)

    def call(self, x, training=False):
        self.calls.assign_add(1.0)
        # A seeded draw in every call, training or not: its generator state is a variable.
        x = x + 0.0 * keras.random.normal(tf.shape(x), seed=self.noise)
        if EAGER_ONLY:
            _ = x.numpy()  # cannot be traced: the probe falls back to eager passes
        return x

    def compute_output_shape(self, shape):
        return shape

model = keras.Sequential([keras.Input((4,)), layers.Dense(3), Counting(), layers.Dense(1)])
model.compile("sgd", "mse", run_eagerly=EAGER_ONLY)
x = np.ones((20, 4), "float32")
model.fit(x, np.zeros((20, 1), "float32"), batch_size=4, epochs=1, shuffle=False, verbose=0)
counter = model.layers[1].calls.numpy()
state = model.layers[1].noise.state.numpy().tolist()
json.dump({{"counter": float(counter), "state": state, "next": float(tf.random.uniform(()))}},
          open("result.json", "w"))
"""


@pytest.mark.parametrize("eager_only", [False, True], ids=["traced", "eager"])
def test_probes_put_back_every_variable_a_layer_writes(write_script, tmp_path, eager_only):
    import json
    import subprocess
    import sys

    path = write_script(PROBE_WRITES.format(eager_only=eager_only))
    ended, events = run_script(path, cwd=tmp_path, options=RunOptions(sample_every=1))
    assert ended.status == "finished", console(events)
    assert len(of(events, LayerOutputs)) == 5  # the probe ran at every one of the 5 steps
    under_studio = json.loads((tmp_path / "result.json").read_text())
    assert under_studio["counter"] == 5.0  # one write per training step, none per probe
    plain = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert plain.returncode == 0, plain.stderr
    assert json.loads((tmp_path / "result.json").read_text()) == under_studio


def test_mixed_precision_gradients_are_shown_unscaled(write_script, tmp_path):
    # A LossScaleOptimizer's apply receives the gradients times its loss scale (2**15);
    # the inspector must show the gradients the weights really get.
    events, expect = _run(
        write_script,
        tmp_path,
        """
        keras.mixed_precision.set_global_policy("mixed_float16")
        try:
            model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                                      layers.Dense(2, dtype="float32")])
            model.compile(keras.optimizers.SGD(0.0), "mse")
            model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
            assert type(model.optimizer).__name__ == "LossScaleOptimizer"
            assert float(model.optimizer.dynamic_scale) == 2.0**15
            dump(model, lambda: mse(y, model(x, training=True)), model.trainable_variables, {})
        finally:
            keras.mixed_precision.set_global_policy("float32")
        """,
    )
    grads = of(events, GradientStats)
    assert [g.step for g in grads] == [1, 2, 3]
    by_path = {g.path: g for g in grads[-1].variables}
    for path, g in expect["grads"].items():  # float16 forward: three digits agree
        assert by_path[path].norm == pytest.approx(float(np.linalg.norm(g)), rel=1e-2, abs=1e-5)
    want = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in expect["grads"].values()))
    assert grads[-1].global_norm == pytest.approx(want, rel=1e-2)


def test_mirrored_strategy_gradients_are_summed_over_replicas(write_script, tmp_path):
    # Two logical CPUs, two replicas: each replica's apply sees half the batch's
    # gradients; the inspector must show what the optimizer applies (their sum).
    # A worker process of its own: logical devices must be set before TF's runtime starts.
    from tests.conftest import wait_for
    from tfstudio.core.channel import Channel
    from tfstudio.core.events import RunEnded
    from tfstudio.core.process import ProcessLauncher

    script = write_script(
        PRELUDE
        + textwrap.dedent(
            """
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
            strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
            assert strategy.num_replicas_in_sync == 2
            with strategy.scope():
                model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                                          layers.Dense(2)])
                model.compile(keras.optimizers.SGD(0.0), "mse")
            model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
            dump(model, lambda: mse(y, model(x, training=True)), model.trainable_variables, {})
            """
        )
    )
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    events: list[object] = []
    try:
        launcher.start(str(script), (), RunOptions(sample_every=1, record=False))
        wait_for(lambda: events.extend(channel.drain()) or of(events, RunEnded), timeout=180)
    finally:
        launcher.shutdown()
    events.extend(channel.drain())
    assert of(events, RunEnded)[-1].status == "finished", console(events)
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    expect = pickle.load(open(tmp_path / "expect.pkl", "rb"))
    grads = of(events, GradientStats)
    assert [g.step for g in grads] == [1, 2, 3]
    by_path = {g.path: g for g in grads[-1].variables}
    for path, g in expect["grads"].items():
        assert by_path[path].norm == pytest.approx(float(np.linalg.norm(g)), rel=1e-4, abs=1e-7)
