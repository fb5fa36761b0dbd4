"""Live advisor rules with real TensorFlow runs (in-process ``run_script``), plus the pure logic."""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pytest

from tests.engine.helpers import of, run_script
from tfstudio.core.events import (
    Advice,
    EpochEnded,
    FitStarted,
    LayerOutput,
    LayerOutputs,
    LayerSummary,
    ModelSummary,
    Notice,
    RunEnded,
    ScriptError,
    StepEnded,
)
from tfstudio.core.options import RunOptions
from tfstudio.engine.advisor_live import (
    DEAD_AFTER_STEPS,
    DIVERGE_STEPS,
    SMOOTH_STEPS,
    LiveAdvisor,
)

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
    options = RunOptions(on_nan="stop", record=False, nan_batch=True)  # the batch is kept
    ended, events = run_script(write_script(NAN), options=options)
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


NEW_FEATURES = """
import numpy as np, keras

rng = np.random.default_rng(0)
y = rng.integers(0, 3, size=(32,))
m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(3)])
m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
m.fit(rng.normal(size=(32, 8)).astype("float32"), y, batch_size=8, epochs=1, verbose=0)
m.fit(rng.normal(size=(32, 5)).astype("float32"), y, batch_size=8, epochs=1, verbose=0)
"""


def test_a_shape_error_is_said_in_the_scripts_terms_before_the_run_ends(write_script):
    """The second fit feeds 5 features to a model trained on 8: TensorFlow fails in a graph
    node with matrix sizes; the notice names the layer, both sizes and the line."""
    ended, events = run_script(write_script(NEW_FEATURES), options=RunOptions(record=False))
    assert ended.status == "failed" and "Matrix size-incompatible" in ended.error.message
    (advice,) = [a for a in of(events, Advice) if a.rule == "shape-mismatch"]
    assert advice.line == 9, advice
    assert "was built for inputs of 8 features" in advice.message and "gives it 5" in advice.message
    assert "keras.Input((5,))" in advice.fix
    assert events.index(advice) < events.index(ended)


DIVERGE = """
import numpy as np, keras

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(200, 4)).astype("float32")
y = x @ np.array([[1.0], [-2.0], [0.5], [1.5]], "float32")

class Boost(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if batch == 40:
            self.model.optimizer.learning_rate.assign(3.0)

m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile(keras.optimizers.Adam(0.05), "mse")
m.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[Boost()])
"""


def test_a_loss_that_runs_away_and_stays_is_divergence(write_script):
    """The learning rate jumps 60x at step 41: the loss climbs and stays up, still finite."""
    options = RunOptions(record=False, on_nan="stop", inspector=False)
    ended, events = run_script(write_script(DIVERGE), options=options)
    advice = [a for a in of(events, Advice) if a.rule == "divergence"]
    assert ended.status == "finished" and len(advice) == 1, of(events, Advice)
    assert "learning rate now 3" in advice[0].message and advice[0].line == 14
    step = int(re.search(r"at step (\d+)", advice[0].message).group(1))
    assert step >= 40 + DIVERGE_STEPS


HEALTHY = """
import numpy as np, keras

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
# small batches of a noisy regression, and layers that output zeros without being ReLUs
x = rng.normal(size=(140, 4)).astype("float32")
y = (x @ np.ones((4, 1)) + rng.normal(scale=0.5, size=(140, 1))).astype("float32")
reg = keras.Sequential([
    keras.Input((4,)),
    keras.layers.Dense(16, activation="relu"),
    keras.layers.Dropout(0.3),
    keras.layers.ActivityRegularization(l1=1e-3),
    keras.layers.Dense(1),
])
reg.compile(keras.optimizers.Adam(0.01), "mse")
reg.fit(x, y, batch_size=2, epochs=1, verbose=0)
# a classifier on random labels
labels = rng.integers(0, 4, size=96)
clf = keras.Sequential([
    keras.Input((4,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)
])
clf.compile(keras.optimizers.Adam(0.01),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True))
clf.fit(x[:96], labels, batch_size=4, epochs=3, verbose=0)
# another loss on another scale
big = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
big.compile(keras.optimizers.Adam(0.5), "mae")
big.fit(x, y * 1000, batch_size=8, epochs=4, verbose=0)
# several models, each traced once
for units in range(2, 8):
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(units), keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    m.fit(x[:16], y[:16], batch_size=8, epochs=1, verbose=0)
"""


def _fresh_retracing_warnings() -> None:
    """TensorFlow warns about retracing at most twice per Python function per process
    (Keras's train step is one function for every model): a test that needs the warning
    starts TensorFlow's count over, whatever ran before it in this test process."""
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    pf._frequent_tracing_detector_manager = pf._FrequentTracingDetectorManager()


def test_noisy_but_healthy_training_gets_no_notice(write_script):
    """Small noisy batches, random labels, fits of different losses, many models: silent."""
    _fresh_retracing_warnings()
    options = RunOptions(record=False, on_nan="stop", sample_every=5)
    ended, events = run_script(write_script(HEALTHY), options=options)
    assert ended.status == "finished" and ended.fits == 9, ended
    assert of(events, LayerOutputs), "the inspector probed the layers"
    assert any(n.kind == "retracing" for n in of(events, Notice))  # TensorFlow warned...
    assert of(events, Advice) == []  # ...and the advisor knew better


DEAD = """
import numpy as np, keras

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).random((140, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
m = keras.Sequential([
    keras.Input((4,)),
    keras.layers.Dense(16, activation="relu", name="hidden",
                       bias_initializer=keras.initializers.Constant(-50.0)),
    keras.layers.Dropout(0.2, name="drop"),
    keras.layers.Dense(1, name="out"),
])
m.compile(keras.optimizers.SGD(0.01), "mse")
m.fit(x, y, batch_size=2, epochs=1, verbose=0)
"""


def test_dead_relu_layer_found_by_the_real_probe(write_script):
    """A ReLU layer whose bias keeps every unit negative: named once, and only it."""
    options = RunOptions(record=False, on_nan="stop", sample_every=5)
    ended, events = run_script(write_script(DEAD), options=options)
    probed = {
        layer.path.rsplit("/", 1)[-1]: layer.activation
        for e in of(events, LayerOutputs)
        for layer in e.layers
    }
    assert probed["hidden"] == "relu" and probed["drop"] == "" and probed["out"] == "linear"
    advice = [a for a in of(events, Advice) if a.rule == "dead-relu"]
    assert ended.status == "finished" and len(advice) == 1, of(events, Advice)
    assert "/hidden (Dense, relu)" in advice[0].message and "100%" in advice[0].message
    step = int(re.search(r"steps (\d+)-(\d+)", advice[0].message).group(2))
    assert step >= DEAD_AFTER_STEPS


def test_the_worker_pump_runs_the_advisor_and_sends_its_advice_in_the_stream():
    """The advisor is a sink of the pump: it runs on the pump thread, its advice goes in the
    batch before RunEnded, and a later sink (a recorder) sees it too."""
    from multiprocessing import Pipe

    from tfstudio.core.channel import Channel
    from tfstudio.engine.advisor_live import AdviceSink
    from tfstudio.worker import WorkerPump

    class Seen:
        def __init__(self) -> None:
            self.events: list = []

        def write(self, events: list) -> None:
            self.events += events

        def close(self) -> None:
            pass

    class Advisor(LiveAdvisor):
        threads: set = set()

        def write(self, events: list) -> list:
            self.threads.add(threading.current_thread().name)
            return super().write(events)

    viewer, worker = Pipe()
    channel, seen, advisor = Channel(), Seen(), Advisor(nan_guard=False)
    pump = WorkerPump(worker, channel, lambda: None, sinks=[seen])
    pump.add_sink(AdviceSink(advisor), first=True)  # as TrainingSession wires it
    pump.start()
    try:
        for event in (_fit(0), _step(1, 1.0), _step(2, float("nan"))):
            channel.emit(event)  # the training thread only queues
        assert viewer.poll(60)
        sent = []
        while not any(isinstance(e, Advice) for e in sent) and viewer.poll(60):
            sent += viewer.recv()[1]
        assert [a.rule for a in of(sent, Advice)] == ["divergence"]
        assert Advisor.threads == {"tfstudio-pump"}
        channel.emit(RunEnded("failed", 1, 1, 2, 1.0, _graph_error(), ""))
    finally:
        pump.close()
    last = []
    while viewer.poll(1):
        last += viewer.recv()[1]
    assert [type(e).__name__ for e in last][-2:] == ["Advice", "RunEnded"]
    assert [a.rule for a in of(seen.events, Advice)] == ["divergence", "graph-mode-error"]
    viewer.close()
    worker.close()


def _graph_error() -> ScriptError:
    return ScriptError(
        "OperatorNotAllowedInGraphError", "using a tf.Tensor as a Python `bool` is not allowed",
        "train.py", 6, "",
    )  # fmt: skip


# -- the decisions themselves, on hand-made events -----------------------------------
def _step(n: int, loss: float, fit: int = 0) -> StepEnded:
    return StepEnded(fit, n, 0, n, 1, {"loss": loss}, {"loss": loss}, float(n))


def _fit(index: int, step: int = 0, shape: str = "(None, 1)") -> FitStarted:
    layer = LayerSummary("out", "Dense", shape, 15, 15)
    model = ModelSummary("m", "Sequential", (layer,), 15, 15)
    return FitStarted(index, model, 5, 0, 4, 1, step, 0.0)


def _feed(adv: LiveAdvisor, events: list) -> list:
    return [a for a in adv.write(events) if isinstance(a, Advice)]


def test_batch_noise_is_not_divergence():
    """Single batches 10x the best, three in a row, among small noisy batches: silent."""
    rng = np.random.default_rng(0)
    losses = np.concatenate([np.linspace(2.0, 0.06, 100), 0.06 * rng.lognormal(0, 1.0, 800)])
    losses[500:503] = 0.6  # the false alarm of the old rule: 10x the best single batch, 3 times
    adv = LiveAdvisor()
    assert _feed(adv, [_fit(0), *(_step(i, float(v)) for i, v in enumerate(losses, 1))]) == []


def test_divergence_is_a_sustained_rise_of_the_smoothed_loss():
    losses = [*np.linspace(1.0, 0.1, 60), *([2.0] * 60)]
    adv = LiveAdvisor()
    out = _feed(adv, [_fit(0), *(_step(i, float(v)) for i, v in enumerate(losses, 1))])
    assert [a.rule for a in out] == ["divergence"]
    step = int(re.search(r"at step (\d+)", out[0].message).group(1))
    assert 60 + DIVERGE_STEPS <= step <= 60 + DIVERGE_STEPS + SMOOTH_STEPS  # sustained, not 1 batch
    assert "averaged over" in out[0].message
    # a short burst that comes back down is not divergence
    burst = [*np.linspace(1.0, 0.1, 60), *([2.0] * 10), *([0.1] * 60)]
    adv = LiveAdvisor()
    assert _feed(adv, [_fit(0), *(_step(i, float(v)) for i, v in enumerate(burst, 1))]) == []


def test_each_fit_has_its_own_loss_scale():
    """A second fit whose loss is 1000x the first fit's best is a new scale, not divergence."""
    adv = LiveAdvisor()
    first = [_step(i, float(v)) for i, v in enumerate(np.linspace(0.5, 0.001, 80), 1)]
    second = [_step(80 + i, float(v), fit=1) for i, v in enumerate(np.linspace(900, 300, 80), 1)]
    assert _feed(adv, [_fit(0), *first, _fit(1, 80), *second]) == []


def test_nan_loss_is_divergence_at_once():
    adv = LiveAdvisor()
    out = _feed(adv, [_fit(0), _step(1, 1.0), _step(2, float("nan"))])
    assert [a.rule for a in out] == ["divergence"] and "step 2" in out[0].message


def _outputs(step: int, *layers: tuple[str, str, str, float], fit: int = 0) -> LayerOutputs:
    """A real ``LayerOutputs`` event: (path, class name, activation, dead fraction) per layer."""
    return LayerOutputs(
        fit,
        step,
        8,
        tuple(
            LayerOutput(i, path, path, cls, 1, (8, 16), "float32", 0.1, 0.1, 0.0, 1.0, 0.5,
                        dead, (1,) * 30, activation=act)
            for i, (path, cls, act, dead) in enumerate(layers)
        ),
    )  # fmt: skip


def test_dead_relu_units_from_layer_outputs():
    """Real ``LayerOutputs`` events: only ReLU layers, >= 90% dead, several samples in a row,
    after the fit has trained a while."""
    relu = ("m/hidden", "Dense", "relu", 0.95)
    others = [
        ("m/dropout", "Dropout", "", 1.0),
        ("m/act_reg", "ActivityRegularization", "", 1.0),
        ("m/dense_linear", "Dense", "linear", 1.0),
        ("m/leaky", "LeakyReLU", "leaky_relu", 1.0),
        ("m/half", "Dense", "relu", 0.75),
    ]
    adv = LiveAdvisor()
    events = [_fit(0, 100)]
    events += [_outputs(100 + s, relu, *others) for s in (1, 10, 20, 30, 40)]  # too early
    assert _feed(adv, events) == []
    out = _feed(adv, [_outputs(100 + s, relu, *others) for s in (50, 60)])
    assert out == []  # two samples in a row: not yet
    out = _feed(adv, [_outputs(170, relu, *others)])
    assert [a.rule for a in out] == ["dead-relu"]
    assert "m/hidden" in out[0].message and "95%" in out[0].message
    assert "steps 150-170" in out[0].message
    assert _feed(adv, [_outputs(180, relu, *others)]) == []  # once per layer


def test_dead_relu_needs_the_share_on_every_sample_in_a_row():
    adv = LiveAdvisor()
    dead, alive = ("m/hidden", "Dense", "relu", 0.95), ("m/hidden", "Dense", "relu", 0.5)
    events = [_fit(0)] + [
        _outputs(s, d) for s, d in zip(range(60, 210, 10), [dead, dead, alive] * 5, strict=True)
    ]
    assert _feed(adv, events) == []


def test_retracing_of_per_model_functions_is_not_a_notice():
    """Keras and tfstudio make one function per model: TensorFlow counts them together."""
    text = "{n} out of the last {n} calls to <function {f} at {a}> triggered tf.function retracing."
    adv = LiveAdvisor()
    notices = [
        Notice("retracing", text.format(n=5, f="WeightProbe.__init__.<locals>.compute", a="0x1")),
        Notice("retracing", text.format(n=5, f=f"{TRAIN}.one_step_on_iterator", a="0x2")),
        Notice("retracing", text.format(n=5, f="build.<locals>.train_step", a="0x3")),
        Notice("retracing", text.format(n=6, f="build.<locals>.train_step", a="0x4")),
    ]
    assert _feed(adv, notices) == []  # a new function each time: each traced once
    again = Notice("retracing", text.format(n=7, f="build.<locals>.train_step", a="0x4"))
    assert [a.rule for a in _feed(adv, [again])] == ["retracing"]  # the same one, again


TRAIN = "TensorFlowTrainer.make_train_function.<locals>"


def test_a_failing_rule_reports_once_and_stops_advising():
    adv = LiveAdvisor()
    broken = StepEnded(0, 1, 0, 1, 1, {"loss": "not a number"}, {}, 0.0)  # type: ignore[dict-item]
    out = adv.write([_fit(0), broken])
    assert [type(e).__name__ for e in out] == ["MonitorError"] and out[0].where == "advisor"
    assert adv.write([_step(2, float("nan"))]) == []


def test_stuck_loss_needs_a_classifier_output_and_three_epochs_at_ln_classes():
    def fit(shape: str) -> FitStarted:
        return _fit(0, shape=shape)

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
