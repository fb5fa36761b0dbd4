"""Live advisor rules with real TensorFlow runs (in-process ``run_script``), plus the pure logic."""

from __future__ import annotations

import math

import pytest

from tests.engine.helpers import of, run_script
from tfstudio.core.events import (
    Advice,
    EpochEnded,
    FitStarted,
    LayerSummary,
    ModelSummary,
    RunEnded,
    StepEnded,
)
from tfstudio.core.options import RunOptions
from tfstudio.engine.advisor_live import LiveAdvisor

pytestmark = pytest.mark.tf

RETRACING = """
import numpy as np, keras, tensorflow as tf

@tf.function
def double(x):
    return x * 2

class Retrace(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        double(batch)  # a new Python int each step: a new trace each call

x = np.zeros((80, 4), "float32"); y = np.zeros((80, 1), "float32")
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[Retrace()])
"""


def test_retracing_names_the_function_and_its_line_once(write_script):
    ended, events = run_script(write_script(RETRACING), options=RunOptions(record=False))
    advice = [a for a in of(events, Advice) if a.rule == "retracing"]
    assert ended.status == "finished"
    assert len(advice) == 1  # many warnings, one cause
    assert advice[0].line == 5 and advice[0].file.endswith("train.py")
    assert "double" in advice[0].message and "input_signature" in advice[0].fix
    # the argument that changes: Keras passes `batch` to the hook as a Python int
    assert "line 10 passes `batch`, a Python int from Keras (on_train_batch_end)" in (
        advice[0].message
    )


NAN = """
import numpy as np, keras

class Ratio(keras.layers.Layer):
    def call(self, x):
        return x[:, :3] / x[:, 3:4]

x = np.ones((400, 4), "float32"); y = np.ones((400, 1), "float32")
x[48:56] = 0.0
m = keras.Sequential([keras.Input((4,)), Ratio(name="ratio"), keras.layers.Dense(1, name="out")])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False)
"""


def test_nan_points_at_the_learning_rate_and_the_first_non_finite_layer(write_script):
    ended, events = run_script(write_script(NAN), options=RunOptions(on_nan="stop", record=False))
    advice = [a for a in of(events, Advice) if a.rule == "divergence"]
    assert len(advice) == 1
    assert "step 7" in advice[0].message and "ratio" in advice[0].message
    assert advice[0].line == 11  # the compile call, where the optimizer is chosen
    assert "learning rate" in advice[0].fix


STUCK = """
import numpy as np, keras

x = np.random.default_rng(0).random((64, 4)).astype("float32")
y = np.arange(64) % 3
m = keras.Sequential([keras.Input((4,)),
                      keras.layers.Dense(3, activation="softmax", kernel_initializer="zeros")])
m.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
m.fit(x, y, batch_size=16, epochs=4, verbose=0)
"""


def test_loss_stuck_at_ln_classes(write_script):
    ended, events = run_script(write_script(STUCK), options=RunOptions(record=False))
    advice = [a for a in of(events, Advice) if a.rule == "stuck-loss"]
    assert ended.status == "finished" and len(advice) == 1
    assert "ln(3)" in advice[0].message and advice[0].line == 8  # the compile call


def test_a_learning_model_is_not_called_stuck(write_script):
    script = (
        STUCK.replace("SGD(0.0)", "SGD(0.5)")
        .replace(', kernel_initializer="zeros"', "")
        .replace("y = np.arange(64) % 3", "y = x[:, :3].argmax(1)\nkeras.utils.set_random_seed(0)")
    )  # labels it can learn: the loss leaves ln(3)
    ended, events = run_script(write_script(script), options=RunOptions(record=False))
    assert ended.status == "finished"
    assert of(events, Advice) == [], of(events, Advice)


GRAPH_ERROR = """
import numpy as np, keras

class Peek(keras.layers.Layer):
    def call(self, x):
        print(float(x.numpy().mean()))
        return x

x = np.zeros((32, 4), "float32"); y = np.zeros((32, 1), "float32")
m = keras.Sequential([Peek(), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=1, verbose=0)
"""


def test_graph_mode_error_is_explained_before_the_run_ends(write_script):
    ended, events = run_script(write_script(GRAPH_ERROR), options=RunOptions(record=False))
    assert ended.status == "failed"
    advice = [a for a in of(events, Advice) if a.rule == "graph-mode-error"]
    assert len(advice) == 1, ended
    assert advice[0].line == 6 and "--eager" in advice[0].fix
    assert events.index(advice[0]) < events.index(ended)


# -- the decisions themselves, on hand-made events -----------------------------------
def _step(n: int, loss: float) -> StepEnded:
    return StepEnded(0, n, 0, n, 1, {"loss": loss}, {"loss": loss}, float(n))


def test_divergence_needs_three_steps_above_ten_times_the_best():
    adv = LiveAdvisor()
    losses = [1.0, 0.5, 0.2, 3.0, 0.3, 2.5, 2.6, 2.7, 2.8]
    out = [a for i, v in enumerate(losses, 1) for a in adv.feed(_step(i, v))]
    assert len(out) == 1 and "step 8" in out[0].message and "0.2" in out[0].message


def test_dead_relu_units_from_layer_outputs():
    """Written against issue 6's ``LayerOutputs`` fields; it fires once that inspector is merged."""

    class LayerOutput:  # the fields of issue 6's event this rule reads
        def __init__(self, path: str, units: int, dead: float) -> None:
            self.path, self.name, self.shape, self.dead_fraction = path, path, (8, units), dead

    class LayerOutputs:
        def __init__(self, step: int, layers: tuple) -> None:
            self.step, self.layers = step, layers

    adv = LiveAdvisor()
    event = LayerOutputs(40, (LayerOutput("hidden", 16, 0.75), LayerOutput("out", 16, 0.1)))
    out = adv.feed(event)
    assert [a.rule for a in out] == ["dead-relu"] and "hidden" in out[0].message
    assert "75%" in out[0].message
    assert adv.feed(event) == []  # once per layer


def test_stuck_loss_needs_a_classifier_output_and_three_epochs_at_ln_classes():
    def fit(shape: str) -> FitStarted:
        layer = LayerSummary("out", "Dense", shape, 15, 15)
        return FitStarted(0, ModelSummary("m", "Sequential", (layer,), 15, 15), 5, 0, 4, 1, 0, 0.0)

    chance = math.log(3)
    for shape, want in (("(None, 3)", 1), ("(None, 1)", 0)):
        adv = LiveAdvisor()
        adv.feed(fit(shape))
        out = [a for e in range(4) for a in adv.feed(EpochEnded(0, e, e, {"loss": chance}, 0.0))]
        assert len(out) == want, shape
    adv = LiveAdvisor()
    adv.feed(fit("(None, 3)"))
    losses = [chance, chance, 0.9 * chance, chance]  # it moved: not stuck for 3 epochs in a row
    assert [
        a for i, v in enumerate(losses) for a in adv.feed(EpochEnded(0, i, i, {"loss": v}, 0.0))
    ] == []
    assert adv.feed(RunEnded("finished", 0, 1, 10, 1.0, None, "")) == []


def test_headless_run_prints_live_advice(write_script):
    """``tfstudio run`` (a worker process) prints each notice as a ``tfstudio: advice:`` line."""
    import subprocess
    import sys

    path = write_script(STUCK)
    r = subprocess.run(
        [sys.executable, "-m", "tfstudio", "run", "--no-record", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("tfstudio: advice:")]
    assert len(lines) == 1
    assert lines[0].startswith(f"tfstudio: advice: {path}:8: [stuck-loss]")
    assert "fix: check from_logits" in lines[0]
