"""The inspector within its time budget: weights and gradients from the first step.

Under the default budget a fit starts with weights summarised on the host, the
gradients the first step applied (recorded inside the train step Keras traces anyway)
and layer outputs from an eager pass (no trace) from the second sample on; the
weights' and layer outputs' own traces come only once the budget's credit covers
them. These tests count samples and events; none of them times anything.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.e2e.test_monitor_changes_nothing import BIT_EXACT, plain_python
from tests.e2e.workers import of, run_in_worker
from tfstudio.core.channel import Channel
from tfstudio.core.events import (
    ConsoleOutput,
    GradientStats,
    InspectorStatus,
    LayerOutputs,
    MonitorError,
    WeightStats,
)
from tfstudio.core.options import RunOptions
from tfstudio.engine.probes.cadence import FIRST_GAP

pytestmark = pytest.mark.tf


def _model_and_data(optimizer="sgd"):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = rng.normal(size=(64, 2)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat()
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)]
    )
    model.compile(optimizer() if callable(optimizer) else optimizer, "mse")
    return model, data


def _fit(model, data, steps, options, callbacks=()):
    from tfstudio.engine.instrument import FitInterceptor
    from tfstudio.engine.monitor import RunMonitor

    channel = Channel()
    monitor = RunMonitor(channel, options=options)
    with FitInterceptor(monitor):
        model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=list(callbacks))
    return channel.drain()


def test_host_weight_summary_matches_the_device_one():
    import tensorflow as tf

    from tfstudio.engine.probes.weights import summarize, summarize_host

    rng = np.random.default_rng(1)
    for x in (
        rng.normal(size=(37, 5)).astype("float32"),
        np.zeros((3, 3), "float32"),
        np.full((4,), 2.5, "float32"),
        np.array([0.0, 1.0, -1.0, 0.5], "float32"),
    ):
        stats, hist = (t.numpy() for t in summarize(tf.constant(x)))
        host_stats, host_hist = summarize_host(x)
        np.testing.assert_allclose(host_stats, stats, rtol=1e-5, atol=1e-6)
        assert host_hist.tolist() == hist.tolist()


def _first_gradients(model, data):
    """The gradients of the first batch at the model's present weights, by name."""
    import tensorflow as tf

    x, y = next(iter(data))
    with tf.GradientTape() as tape:
        loss = model.compute_loss(x=x, y=y, y_pred=model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    return {v.path: g.numpy() for v, g in zip(model.trainable_variables, grads, strict=True)}


@pytest.mark.parametrize(
    "way", ["copied", "summarised-in-step", "derived-adam", "fallback-rmsprop"]
)
def test_a_short_budget_fit_has_the_first_steps_gradients_at_its_first_sample(monkeypatch, way):
    """On main before issue 54 a fit this short recorded no gradient at all: their
    recording twin waited for the budget to pay for its trace. Every way of recording:
    a small model's gradients kept as copies, a large one's summarised on armed steps,
    Adam's derived from its first moment (no op in the step; rel 1e-4: the derived
    value is (m - m_prev) / (1 - beta_1) in float32 state, ten times m's rounding), and
    RMSprop (not derivable) falling back to the copies."""
    from tfstudio.engine.probes import gradients
    from tfstudio.engine.probes.inspector import _gradient_probes

    if way == "summarised-in-step":
        monkeypatch.setattr(gradients, "COPY_LIMIT", 0)
    optimizer = {"derived-adam": "adam", "fallback-rmsprop": "rmsprop"}.get(way, "sgd")
    rel = 1e-4 if way == "derived-adam" else 1e-5
    model, data = _model_and_data(optimizer)
    want = _first_gradients(model, data)
    events = _fit(model, data, 200, RunOptions())
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    probe = _gradient_probes[model]
    assert bool(probe._derived) == (way == "derived-adam")
    assert (probe._flag is None) == (way == "derived-adam")  # no conditional, no flag
    if way == "derived-adam":  # nothing added to the step: no copies, no summaries
        assert not probe._copies and not probe._functions
    weights = of(events, WeightStats)
    grads = of(events, GradientStats)
    assert weights and weights[0].step == 1  # something to see at once
    assert grads and grads[0].step == 1, [g.step for g in grads]
    # Every sample has both (the same steps).
    assert [g.step for g in grads] == [w.step for w in weights]
    # The first is the gradient the first step applied: each variable's norm, min, max.
    first = {v.path: v for v in grads[0].variables}
    assert sorted(first) == sorted(want)
    for path, g in want.items():
        got = first[path]
        assert got.norm == pytest.approx(float(np.linalg.norm(g)), rel=rel)
        assert got.min == pytest.approx(float(g.min()), rel=rel, abs=1e-7)
        assert got.max == pytest.approx(float(g.max()), rel=rel, abs=1e-7)
        assert sum(got.hist) == g.size
    total = np.sqrt(sum(float(np.sum(g.astype("float64") ** 2)) for g in want.values()))
    assert grads[0].global_norm == pytest.approx(total, rel=rel)
    # Layer outputs (an eager pass, several weight summaries' worth) from the second sample.
    assert all(lo.step > 1 for lo in of(events, LayerOutputs))
    status = of(events, InspectorStatus)  # each sample's, then the fit's end's
    assert len(status) == len(weights) + 1 < 200 // FIRST_GAP + 1
    assert all(s.mode == "budget" and not s.waiting for s in status)
    assert not [e.text for e in of(events, ConsoleOutput) if "radients" in e.text]


def _derived_optimizers():
    import keras

    decay = keras.optimizers.schedules.ExponentialDecay(0.05, 2, 0.5)  # a new rate each 2
    return {
        "adam": lambda: keras.optimizers.Adam(0.01),
        "adam-amsgrad": lambda: keras.optimizers.Adam(0.01, amsgrad=True),
        "adamw": lambda: keras.optimizers.AdamW(0.01, weight_decay=0.05),
        "adamax": lambda: keras.optimizers.Adamax(0.01),
        "nadam": lambda: keras.optimizers.Nadam(0.01),
        "lion": lambda: keras.optimizers.Lion(0.001),
        "sgd-momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
        "sgd-nesterov-schedule": lambda: keras.optimizers.SGD(decay, momentum=0.9, nesterov=True),
        # apply divides the gradients by the factor before m sees them (the recorded way:
        # the conditional, dividing too)
        "adam-loss-scale-factor": lambda: keras.optimizers.Adam(0.01, loss_scale_factor=128.0),
    }


DERIVED = [
    "adam",
    "adam-amsgrad",
    "adamw",
    "adamax",
    "nadam",
    "lion",
    "sgd-momentum",
    "sgd-nesterov-schedule",
    "adam-loss-scale-factor",
]


def _per_sample(events):
    return {g.step: g for g in of(events, GradientStats)}


# every optimizer read before each sampled step (3); two of them also at consecutive steps (1)
@pytest.mark.parametrize(
    ("name", "every"), [(n, 3) for n in DERIVED] + [("adam", 1), ("sgd-nesterov-schedule", 1)]
)
def test_derived_gradients_are_the_applied_ones_at_every_sample(monkeypatch, name, every):
    """The gradients derived from the optimizer's state equal, sample by sample, the ones
    the same fit records as copies (``derivable`` off); the monitored training is the
    same (bit-exact), so the two fits apply the same gradients. ``every`` 1 samples at
    consecutive steps (the state read at a sample is the next one's 'before'), 3 reads
    it at the hook before each sampled step."""
    from tfstudio.engine.probes import gradients
    from tfstudio.engine.probes.inspector import _gradient_probes

    runs = []
    for derive in (True, False):
        if not derive:
            monkeypatch.setattr(gradients, "derivable", lambda *a, **k: None)
        model, data = _model_and_data(_derived_optimizers()[name])
        events = _fit(model, data, 10, RunOptions(sample_every=every))
        assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
        assert bool(_gradient_probes[model]._derived) == derive
        runs.append(_per_sample(events))
    derived, copied = runs
    want_steps = list(range(1, 11, every))
    assert sorted(derived) == sorted(copied) == want_steps
    for step in want_steps:
        got, want = derived[step], copied[step]
        assert len(got.variables) == len(want.variables) == 4  # (names: a new model's)
        for a, b in zip(got.variables, want.variables, strict=True):
            assert a.norm == pytest.approx(b.norm, rel=1e-4, abs=1e-7), (step, a.path)
            assert a.min == pytest.approx(b.min, rel=1e-4, abs=1e-6), (step, a.path)
            assert a.max == pytest.approx(b.max, rel=1e-4, abs=1e-6), (step, a.path)
            assert sum(a.hist) == sum(b.hist)
        assert got.global_norm == pytest.approx(want.global_norm, rel=1e-4)


def test_derived_gradients_of_an_eager_fit_and_a_step_that_applies_twice(monkeypatch):
    """``run_eagerly``: the wrapper runs at every step and adds nothing; the derived
    gradients still equal the recorded ones. A ``train_step`` that applies its optimizer
    twice a step: the optimizer advances by two, its state does not give one step's
    gradient, and the samples have no gradients from it (nothing wrong, no error), and
    a note says why, once."""
    import keras

    from tfstudio.engine.probes import gradients

    runs = []
    for derive in (True, False):
        if not derive:
            monkeypatch.setattr(gradients, "derivable", lambda *a, **k: None)
        model, data = _model_and_data(lambda: keras.optimizers.Adam(0.01))
        model.run_eagerly = True
        events = _fit(model, data, 5, RunOptions(sample_every=2))
        assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
        runs.append(_per_sample(events))
    derived, copied = runs
    assert sorted(derived) == sorted(copied) == [1, 3, 5]
    for step in derived:
        assert derived[step].global_norm == pytest.approx(copied[step].global_norm, rel=1e-4)
    monkeypatch.undo()

    class Twice(keras.Sequential):
        def train_step(self, data):
            import tensorflow as tf

            x, y = data
            for _ in range(2):
                with tf.GradientTape() as tape:
                    loss = self.compute_loss(x=x, y=y, y_pred=self(x, training=True))
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return {"loss": loss}

    model, data = _model_and_data("adam")
    twice = Twice(model.layers)
    twice.compile(keras.optimizers.Adam(0.01), "mse")
    events = _fit(twice, data, 4, RunOptions(sample_every=1))
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    assert int(twice.optimizer.iterations.numpy()) == 8
    assert of(events, WeightStats) and not of(events, GradientStats)
    notes = [e.text for e in of(events, ConsoleOutput) if "took 2 steps" in e.text]
    assert len(notes) == 1, [e.text for e in of(events, ConsoleOutput)]


@pytest.mark.parametrize("clip", ["global_clipnorm", "clipvalue"])
def test_derived_gradients_are_the_clipped_ones_the_optimizer_applies(monkeypatch, clip):
    """Clipping happens before the update: the derived value is the applied (clipped)
    gradient, where the copies hold the gradient as ``apply`` received it."""
    import keras

    from tfstudio.engine.probes import gradients

    limit = 0.05
    runs = []
    for derive in (True, False):
        if not derive:
            monkeypatch.setattr(gradients, "derivable", lambda *a, **k: None)
        model, data = _model_and_data(lambda: keras.optimizers.Adam(0.01, **{clip: limit}))
        events = _fit(model, data, 4, RunOptions(sample_every=1))
        assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
        runs.append(_per_sample(events))
    derived, received = runs
    assert sorted(derived) == sorted(received) == [1, 2, 3, 4]
    for step in derived:
        got, raw = derived[step], received[step]
        if clip == "global_clipnorm":
            assert raw.global_norm > limit  # (the clip does something)
            scale = limit / raw.global_norm
            assert got.global_norm == pytest.approx(limit, rel=1e-4)
            for a, b in zip(got.variables, raw.variables, strict=True):
                assert a.norm == pytest.approx(b.norm * scale, rel=1e-4, abs=1e-7)
        else:
            assert max(v.max for v in raw.variables) > limit
            for a, b in zip(got.variables, raw.variables, strict=True):
                want_max, want_min = np.clip([b.max, b.min], -limit, limit)
                assert a.max == pytest.approx(want_max, rel=1e-4, abs=1e-7)
                assert a.min == pytest.approx(want_min, rel=1e-4, abs=1e-7)


def test_every_sample_has_gradients_and_samples_come_once_a_second_of_training():
    """A clock that runs 10 ms per training step and not at all in the inspector."""
    import keras

    from tfstudio.engine.probes.inspector import Inspector

    now = [0.0]

    class SlowSteps(keras.callbacks.Callback):  # runs before the StudioCallback's hook
        def on_train_batch_end(self, batch, logs=None):
            now[0] += 0.010

    model, data = _model_and_data()
    saved = Inspector.clock
    Inspector.clock = staticmethod(lambda: now[0])
    try:
        events = _fit(model, data, 450, RunOptions(), callbacks=[SlowSteps()])
    finally:
        Inspector.clock = saved
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    grads = of(events, GradientStats)
    assert [g.step for g in grads] == [w.step for w in of(events, WeightStats)]
    assert grads[0].step == 1 and len(grads) >= 4
    status = of(events, InspectorStatus)
    # Samples this cheap come once a second of training (100 steps), not as often as
    # the budget would allow.
    assert status[-1].capped and status[-1].every >= 100
    assert not any(s.waiting for s in status)
    # Layer outputs from the second sample on: eager passes first, then the trace.
    outputs = of(events, LayerOutputs)
    assert outputs and outputs[0].step > 1


def test_the_weight_functions_trace_waits_until_the_budget_covers_what_a_trace_costs(
    monkeypatch,
):
    """Clock: 10 ms a training step, 5 ms a host weight summary, and the weight function's
    trace 45 ms a variable (what it took on a loaded 2-core VM: 0.24-0.32 s for the bench's
    6 variables); nothing else in the inspector. Estimated as 20 host summaries (100 ms),
    the trace came once 3% had earned that, and the share jumped past the budget."""
    import keras

    from tfstudio.engine.probes.inspector import Inspector
    from tfstudio.engine.probes.weights import WeightProbe

    now = [0.0]
    traced_at: list[int] = []

    class SlowSteps(keras.callbacks.Callback):  # runs before the StudioCallback's hook
        def on_train_batch_end(self, batch, logs=None):
            now[0] += 0.010

    on_host, sample = WeightProbe._on_host, WeightProbe.sample

    def slow_host(self):
        now[0] += 0.005
        return on_host(self)

    def slow_trace(self, fit_index, step, traced=True):
        if traced and not self.traced:
            now[0] += 0.045 * len(self.variables)
            traced_at.append(step)
        return sample(self, fit_index, step, traced)

    monkeypatch.setattr(WeightProbe, "_on_host", slow_host)
    monkeypatch.setattr(WeightProbe, "sample", slow_trace)
    model, data = _model_and_data()
    monkeypatch.setattr(Inspector, "clock", staticmethod(lambda: now[0]))
    events = _fit(model, data, 1500, RunOptions(), callbacks=[SlowSteps()])
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    assert len(traced_at) == 1, "the budget never paid for the weight function's trace"
    after = [s for s in of(events, InspectorStatus) if s.step >= traced_at[0]]
    assert after and max(s.overhead for s in after) <= 0.03, [s.overhead for s in after]


def test_a_later_fit_of_the_model_records_its_first_steps_gradients_without_a_new_trace():
    from tfstudio.engine.probes.inspector import _gradient_probes

    model, data = _model_and_data()
    first = _fit(model, data, 20, RunOptions())
    probe = _gradient_probes[model]
    traced = probe.trace_seconds
    assert traced > 0.0  # the recording was added to Keras's trace of the first fit
    want = _first_gradients(model, data)
    second = _fit(model, data, 30, RunOptions())
    for events in (first, second):
        assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
        assert of(events, GradientStats)[0].step == of(events, WeightStats)[0].step
    assert probe.trace_seconds == traced  # Keras's train function (and its recording) kept
    grads = of(second, GradientStats)[0]
    assert grads.step == 1  # (a new monitor: its steps count from 1)
    norms = sorted(v.norm for v in grads.variables)
    assert norms == pytest.approx(sorted(float(np.linalg.norm(g)) for g in want.values()), rel=1e-5)


def test_a_budget_run_is_bit_identical_to_plain_python(tmp_path):
    plain = plain_python(BIT_EXACT, [str(tmp_path / "plain.npz")], tmp_path)
    assert plain.returncode == 0, plain.stderr
    options = RunOptions(logdir=str(tmp_path / "runs"), on_nan="stop")  # default budget
    ended, events = run_in_worker(BIT_EXACT, [str(tmp_path / "studio.npz")], options)
    assert ended.status == "finished", ended
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    assert of(events, WeightStats)  # the host path ran
    want = np.load(tmp_path / "plain.npz")
    got = np.load(tmp_path / "studio.npz")
    different = [k for k in want.files if want[k].tobytes() != got[k].tobytes()]
    assert different == []
    assert float(got["counter"]) == 5.0  # one write per training step, none per probe
