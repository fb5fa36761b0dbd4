"""Controls of a live training, with real TensorFlow: pause, checkpoints, eager/graph, LR, NaN."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import wait_for
from tests.engine.helpers import console, of, run_script
from tests.engine.test_stop_pause import Collector
from tfstudio.core.channel import Channel
from tfstudio.core.commands import (
    DeleteCheckpoint,
    Pause,
    RestoreCheckpoint,
    Resume,
    SaveCheckpoint,
    SetExecutionMode,
    SetLearningRate,
    Stop,
)
from tfstudio.core.events import (
    CheckpointDeleted,
    CheckpointRefused,
    CheckpointRestored,
    CheckpointSaved,
    ConsoleOutput,
    ExecutionMode,
    FitEnded,
    LearningRate,
    NonFinite,
    Notice,
    RunState,
    StepEnded,
)
from tfstudio.core.options import RunOptions
from tfstudio.engine.control import NAN_EXIT_CODE
from tfstudio.engine.session import TrainingSession

pytestmark = pytest.mark.tf

ADAM_FIT = """
import numpy as np, keras
rng = np.random.default_rng(0)
x = rng.random((4000, 4), dtype="float32"); y = x.sum(1, keepdims=True)
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="hidden"),
                      keras.layers.Dense(1, name="out")])
m.compile(keras.optimizers.Adam(0.01), "mse")
m.fit(x, y, batch_size=8, epochs=20, verbose=0)
"""


def start(path, **options) -> tuple[TrainingSession, Collector]:
    # These tests are about the controls; the inspector's probes (tested on their own)
    # would add traces and sampled steps to every case.
    options.setdefault("inspector", False)
    channel = Channel()
    session = TrainingSession(path, (), channel, options=RunOptions(**options))
    session.start()
    return session, Collector(channel)


def pause(seen: Collector) -> RunState:
    """Pause and wait until the training thread is parked; returns the RunState."""
    before = len(of(seen.poll(), RunState))
    seen.channel.send(Pause())
    wait_for(lambda: len(of(seen.poll(), RunState)) > before)
    state = of(seen.events, RunState)[-1]
    assert state.state == "paused"
    return state


def wait_event(seen: Collector, kind: type, count: int = 1):
    wait_for(lambda: len(of(seen.poll(), kind)) >= count)
    return of(seen.events, kind)[count - 1]


def state_of(model) -> dict[str, np.ndarray]:
    out = {f"model/{i}/{v.path}": v.numpy().copy() for i, v in enumerate(model.variables)}
    out.update(
        {f"opt/{i}/{v.path}": v.numpy().copy() for i, v in enumerate(model.optimizer.variables)}
    )
    return out


def test_pause_resume_save_restore_bit_exact_and_mismatch_refused(write_script, tmp_path):
    import keras
    import tensorflow as tf

    session, seen = start(write_script(ADAM_FIT), checkpoint_dir=str(tmp_path / "ck"))
    wait_for(lambda: len(seen.steps()) >= 5)
    held = pause(seen)
    model = session.monitor.control.model
    # pause/resume keeps the step count continuous
    assert seen.steps()[-1].global_step == held.global_step
    seen.channel.send(SaveCheckpoint())
    saved = wait_event(seen, CheckpointSaved)
    assert saved.step == held.global_step and np.isfinite(saved.loss)
    at_save = state_of(model)
    iterations_at_save = int(model.optimizer.iterations.numpy())
    assert iterations_at_save == held.global_step
    seen.channel.send(Resume())
    wait_for(lambda: seen.steps()[-1].global_step > held.global_step + 20)
    steps = [e.global_step for e in seen.steps()]
    assert steps == list(range(1, steps[-1] + 1))  # no gap, no repeat across the pause
    later = pause(seen)
    assert not np.array_equal(state_of(model)["model/0/sequential/hidden/kernel"],
                              at_save["model/0/sequential/hidden/kernel"])  # fmt: skip

    # a checkpoint of another model is refused and nothing changes
    other = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    other.compile(keras.optimizers.Adam(0.01), "mse")
    other.optimizer.build(other.trainable_variables)
    step = tf.Variable(3, dtype=tf.int64)
    wrong = tf.train.Checkpoint(model=other, optimizer=other.optimizer, step=step)
    wrong_path = wrong.write(str(tmp_path / "other" / "ckpt-3"))
    before = state_of(model)
    seen.channel.send(RestoreCheckpoint(wrong_path))
    refused = wait_event(seen, CheckpointRefused)
    assert refused.action == "restore"
    assert "(5, 8)" in refused.reason and "(4, 8)" in refused.reason  # names the shapes
    after = state_of(model)
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert session.monitor.global_step == later.global_step

    # restoring the saved checkpoint brings weights, optimizer state and step back exactly
    seen.channel.send(RestoreCheckpoint(saved.path))
    restored = wait_event(seen, CheckpointRestored)
    assert restored.step == saved.step and restored.optimizer_iterations == iterations_at_save
    now = state_of(model)
    assert now.keys() == at_save.keys()
    assert all(np.array_equal(now[k], at_save[k]) for k in at_save)
    n_before = len(seen.steps())
    seen.channel.send(Resume())
    wait_for(lambda: len(seen.steps()) > n_before + 2)
    resumed = seen.steps()[n_before:]
    assert [e.global_step for e in resumed[:3]] == [saved.step + 1, saved.step + 2, saved.step + 3]
    assert all(np.isfinite(e.values["loss"]) for e in resumed[:3])

    # deleting a checkpoint removes its files
    pause(seen)
    seen.channel.send(DeleteCheckpoint(saved.path))
    wait_event(seen, CheckpointDeleted)
    assert not list((tmp_path / "ck").glob("ckpt-*"))
    seen.channel.send(Stop())
    ended = session.join(timeout=60)
    assert ended is not None and ended.status == "stopped"
    # the steps the restore took back were trained all the same: the summary says both
    assert ended.rewound == later.global_step - saved.step > 0
    trained = seen.steps()[-1].global_step + ended.rewound
    assert f"{trained} steps trained, run step {ended.global_step} after a restore" in (
        ended.summary()
    )


PRINTS = """
import numpy as np, keras, tensorflow as tf

class Loud(keras.layers.Layer):
    def call(self, x):
        print("python print in call")
        tf.print("tf.print in call")
        return x

x = np.zeros((4000, 4), "float32"); y = np.zeros((4000, 1), "float32")
m = keras.Sequential([keras.Input((4,)), Loud(), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=20, verbose=0)
"""


def _count(seen: Collector, text: str, native: bool) -> int:
    return sum(e.text.count(text) for e in of(seen.poll(), ConsoleOutput) if e.native == native)


def test_eager_graph_switch_changes_run_eagerly_traces_and_prints(write_script):
    # (The inspector, off here, traces the model's layers for its probes: print runs then too.)
    session, seen = start(write_script(PRINTS))
    wait_for(lambda: len(seen.steps()) >= 10)
    held = pause(seen)
    model = session.monitor.control.model
    assert model.run_eagerly is False
    graph_traces = of(seen.poll(), ExecutionMode)[-1].traces
    assert graph_traces >= 1
    wait_for(lambda: _count(seen, "tf.print in call", native=True) >= held.global_step)
    # graph mode: Python's print ran only while tracing, tf.print (fd level) every step
    # (+1: Keras calls the layer once symbolically when it builds the model)
    assert _count(seen, "python print in call", native=False) <= graph_traces + 1
    assert held.global_step >= 10
    assert _count(seen, "tf.print in call", native=False) == 0

    seen.channel.send(SetExecutionMode(eager=True))
    mode = wait_for(lambda: [e for e in of(seen.poll(), ExecutionMode) if e.eager])[-1]
    assert model.run_eagerly is True and mode.global_step == held.global_step
    prints_before = _count(seen, "python print in call", native=False)
    seen.channel.send(Resume())
    wait_for(lambda: seen.steps()[-1].global_step >= held.global_step + 10)
    eager_held = pause(seen)
    eager_steps = eager_held.global_step - held.global_step
    # eager: print runs every step (no new traces)
    assert _count(seen, "python print in call", native=False) - prints_before >= eager_steps
    assert of(seen.poll(), ExecutionMode)[-1].traces == graph_traces

    seen.channel.send(SetExecutionMode(eager=False))
    seen.channel.send(Resume())
    wait_for(lambda: of(seen.poll(), ExecutionMode)[-1].traces > graph_traces)
    assert model.run_eagerly is False
    session.stop()
    assert session.join(timeout=60).status == "stopped"


LR_FIT = """
import numpy as np, keras

class ShowLR(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        opt = self.model.optimizer
        print(f"lr before step {int(opt.iterations.numpy()) + 1}: "
              f"{float(opt.learning_rate.numpy()):.6f}")

x = np.zeros((4000, 4), "float32"); y = np.zeros((4000, 1), "float32")
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile(keras.optimizers.SGD(RATE), "mse")
m.fit(x, y, batch_size=8, epochs=20, verbose=0, callbacks=[ShowLR()])
"""


def test_learning_rate_change_is_seen_at_the_next_step(write_script):
    session, seen = start(write_script(LR_FIT.replace("RATE", "0.1")))
    wait_for(lambda: len(seen.steps()) >= 3)
    first = wait_event(seen, LearningRate)
    assert first.value == pytest.approx(0.1) and not first.is_schedule
    held = pause(seen)
    seen.channel.send(SetLearningRate(0.025))
    wait_for(lambda: of(seen.poll(), LearningRate)[-1].value == pytest.approx(0.025))
    seen.channel.send(Resume())
    nxt = held.global_step + 1
    wait_for(lambda: f"lr before step {nxt}:" in console(seen.poll()))
    assert f"lr before step {nxt}: 0.025000" in console(seen.events)
    assert f"lr before step {held.global_step}: 0.100000" in console(seen.events)
    session.stop()
    session.join(timeout=60)


def test_a_schedule_is_shown_and_only_replaced_when_confirmed(write_script):
    schedule = "keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)"
    session, seen = start(write_script(LR_FIT.replace("RATE", schedule)))
    wait_for(lambda: len(seen.steps()) >= 3)
    assert wait_event(seen, LearningRate).is_schedule
    held = pause(seen)
    seen.channel.send(SetLearningRate(0.5))
    notice = wait_event(seen, Notice)
    assert "schedule" in notice.text and "ExponentialDecay" in notice.text
    assert of(seen.poll(), LearningRate)[-1].is_schedule
    seen.channel.send(SetLearningRate(0.5, replace_schedule=True))
    wait_for(lambda: not of(seen.poll(), LearningRate)[-1].is_schedule)
    seen.channel.send(Resume())
    nxt = held.global_step + 1
    wait_for(lambda: f"lr before step {nxt}:" in console(seen.poll()))
    assert f"lr before step {nxt}: 0.500000" in console(seen.events)
    session.stop()
    session.join(timeout=60)


GAN_FIT = """
import numpy as np, tensorflow as tf, keras

class TwoOptimizers(keras.Model):
    # A GAN-like model: its train_step applies two optimizers of its own.
    def __init__(self):
        super().__init__()
        self.d = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        self.g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4)])
    def compile(self, d_opt, g_opt):
        super().compile()  # model.optimizer: Keras's default, never stepped
        self.d_opt, self.g_opt = d_opt, g_opt
    def train_step(self, real):
        with tf.GradientTape() as tape:
            d_loss = tf.reduce_mean(tf.square(self.d(real) - 1.0))
        grads = tape.gradient(d_loss, self.d.trainable_weights)
        self.d_opt.apply_gradients(zip(grads, self.d.trainable_weights))
        with tf.GradientTape() as tape:
            g_loss = tf.reduce_mean(tf.square(self.d(self.g(real[:, :2])) - 1.0))
        grads = tape.gradient(g_loss, self.g.trainable_weights)
        self.g_opt.apply_gradients(zip(grads, self.g.trainable_weights))
        return {"d_loss": d_loss, "g_loss": g_loss}

class ShowLR(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        print(f"d_opt lr: {float(self.model.d_opt.learning_rate):.6f}")

m = TwoOptimizers()
m.compile(keras.optimizers.Adam(0.0002), keras.optimizers.Adam(0.0005))
x = np.ones((4000, 4), "float32")
m.fit(x, batch_size=8, epochs=20, verbose=0, callbacks=[ShowLR()])
"""


def test_a_train_step_with_optimizers_of_its_own_shows_and_sets_the_one_that_trains(
    write_script,
):
    """model.optimizer (Keras's default RMSprop at 0.001) never steps: not its rate."""
    session, seen = start(write_script(GAN_FIT))
    wait_for(lambda: any(e.value == pytest.approx(0.0002) for e in of(seen.poll(), LearningRate)))
    notes = console(seen.events, "tfstudio")
    assert "applies d_opt (Adam), g_opt (Adam), not model.optimizer" in notes
    assert "the learning rate shown and set is d_opt's" in notes
    pause(seen)
    seen.channel.send(SetLearningRate(0.003))
    wait_for(lambda: of(seen.poll(), LearningRate)[-1].value == pytest.approx(0.003))
    seen.channel.send(Resume())
    wait_for(lambda: "d_opt lr: 0.003000" in console(seen.poll(), "stdout"))  # the script's d_opt
    assert "d_opt lr: 0.000200" in console(seen.events, "stdout")
    session.stop()
    session.join(timeout=60)


def test_lr_option_reaches_the_optimizer_a_train_step_applies(write_script):
    """--lr goes to model.optimizer before the first step; once the step shows which
    optimizer trains, it goes there too."""
    session, seen = start(write_script(GAN_FIT), lr=0.004)
    wait_for(lambda: "d_opt lr: 0.004000" in console(seen.poll(), "stdout"))
    assert of(seen.poll(), LearningRate)[-1].value == pytest.approx(0.004)
    session.stop()
    session.join(timeout=60)


NAN_AT_STEP_7 = """
import numpy as np, keras

class Ratio(keras.layers.Layer):
    '''Divides the first three features by the fourth: 0/0 on the bad rows.'''
    def call(self, x):
        return x[:, :3] / x[:, 3:4]

x = np.ones((400, 4), "float32"); y = np.ones((400, 1), "float32")
x[48:56] = 0.0  # the 7th batch of 8
m = keras.Sequential([keras.Input((4,)), Ratio(name="ratio"), keras.layers.Dense(1, name="out")])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False)
"""


def test_nan_pauses_at_that_step_and_names_the_layer(write_script, tmp_path):
    session, seen = start(
        write_script(NAN_AT_STEP_7),
        checkpoint_every=3,
        checkpoint_dir=str(tmp_path / "ck"),
        nan_batch=True,  # graph steps keep their batch from the first step
    )
    bad = wait_event(seen, NonFinite)
    state = wait_event(seen, RunState)
    assert state.state == "paused" and state.global_step == 7 and "non-finite" in state.reason
    assert bad.global_step == 7 and bad.action == "pause"
    assert bad.layer == "ratio"
    assert bad.gradient.endswith("out/kernel") and bad.variable.endswith("out/kernel")
    assert "ckpt-6" in bad.detail  # recomputed with the last good weights
    assert seen.steps()[-1].global_step == 7
    assert "First layer with a non-finite output: ratio" in console(seen.events, "tfstudio")
    # restore the last checkpoint: the weights are finite again
    seen.channel.send(RestoreCheckpoint(str(tmp_path / "ck")))
    wait_event(seen, CheckpointRestored)
    model = session.monitor.control.model
    assert all(np.all(np.isfinite(v.numpy())) for v in model.variables)
    session.stop()
    assert session.join(timeout=60).status == "stopped"


def test_by_default_the_first_nan_arms_the_guard_and_the_next_is_recomputed(write_script, tmp_path):
    # Graph steps keep no batch until a first NaN (they pay nothing for the guard): that
    # NaN is named without its batch; the guard then keeps every batch, so when the bad
    # rows come back (after a restore, the next epoch's 7th batch) the layer is named.
    session, seen = start(
        write_script(NAN_AT_STEP_7), checkpoint_every=3, checkpoint_dir=str(tmp_path / "ck")
    )
    first = wait_event(seen, NonFinite)
    assert first.global_step == 7 and first.layer == "" and "--nan-batch" in first.detail
    assert first.variable.endswith("out/kernel")  # the weights are still scanned
    wait_for(lambda: of(seen.poll(), RunState) and of(seen.events, RunState)[-1].state == "paused")
    seen.channel.send(RestoreCheckpoint(str(tmp_path / "ck")))
    wait_event(seen, CheckpointRestored)
    seen.channel.send(Resume())
    second = wait_event(seen, NonFinite, 2)
    assert second.global_step == 6 + 50  # counted from ckpt-6 on; 50 steps an epoch
    assert second.layer == "ratio" and "ckpt-" in second.detail
    session.stop()
    assert session.join(timeout=60).status == "stopped"


def test_an_armed_graph_keeper_copies_each_batch_and_an_unarmed_one_adds_nothing():
    import tensorflow as tf

    from tfstudio.engine.nan_guard import BatchKeeper

    def traced(keeper: BatchKeeper) -> tuple:
        @tf.function
        def step(x: tf.Tensor) -> tf.Tensor:
            keeper.keep((x,))
            return tf.reduce_mean(x)

        return step, step.get_concrete_function(tf.TensorSpec([2, 3], tf.float32))

    unarmed = BatchKeeper()
    step, concrete = traced(unarmed)
    step(tf.fill([2, 3], 1.0))
    assert unarmed.last() is None
    assert not any(op.type == "AssignVariableOp" for op in concrete.graph.get_operations())

    armed = BatchKeeper(armed=True)
    step, _ = traced(armed)
    step(tf.fill([2, 3], 5.0))
    step(tf.fill([2, 3], 7.0))  # the Python side reads it after each step: the last one
    kept = armed.last()[0].numpy()
    assert kept.shape == (2, 3) and np.all(kept == 7.0)
    assert not armed.disabled


def test_on_nan_stop_ends_the_run_with_its_own_exit_code(write_script):
    ended, events = run_script(write_script(NAN_AT_STEP_7), options=RunOptions(on_nan="stop"))
    assert ended.status == "stopped" and ended.exit_code == NAN_EXIT_CODE
    assert "non-finite loss at step 7" in ended.message
    assert of(events, StepEnded)[-1].global_step == 7
    assert of(events, NonFinite)[0].action == "stop"


STOP_AT = """
import numpy as np, keras
x = np.zeros((80, 4), "float32"); y = np.zeros((80, 1), "float32")
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=5, verbose=0, validation_data=(x, y))
print("after the first fit")
m.fit(x, y, batch_size=8, epochs=5, verbose=0)
print("end of script")
"""


def test_stop_at_step_17_trains_exactly_17_steps_and_the_script_goes_on(write_script):
    ended, events = run_script(write_script(STOP_AT), options=RunOptions(stop_at_step=17))
    assert ended.status == "finished" and ended.exit_code == 0
    assert ended.global_step == 17
    assert [e.global_step for e in of(events, StepEnded)] == list(range(1, 18))
    assert len(of(events, FitEnded)) == 1  # the second fit was skipped
    text = console(events)
    assert "after the first fit" in text and "end of script" in text


def test_start_from_a_checkpoint_folder_and_lr_override(write_script, tmp_path):
    path = write_script(ADAM_FIT)
    folder = tmp_path / "ck"
    ended, events = run_script(
        path, options=RunOptions(stop_at_step=10, checkpoint_every=5, checkpoint_dir=str(folder))
    )
    saved = of(events, CheckpointSaved)
    assert [s.step for s in saved] == [5, 10] and all(s.automatic for s in saved)
    ended, events = run_script(
        path, options=RunOptions(stop_at_step=13, restore=str(folder), lr=0.002)
    )
    assert f"restored step 10 from {folder / 'ckpt-10'}" in console(events, "tfstudio")
    assert [e.global_step for e in of(events, StepEnded)] == [11, 12, 13]
    assert of(events, LearningRate)[-1].value == pytest.approx(0.002)
    assert ended.status == "finished"


def test_restore_of_a_missing_checkpoint_fails_the_run_before_training(write_script, tmp_path):
    ended, events = run_script(
        write_script(ADAM_FIT), options=RunOptions(restore=str(tmp_path / "nothing"))
    )
    assert ended.exit_code == 2 and "--restore" in ended.message
    assert len(of(events, StepEnded)) <= 1


RETRACING = """
import numpy as np, keras, tensorflow as tf

@tf.function
def f(x):
    return x * 2

class Retrace(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        f(batch)  # a new Python int each step: a new trace each call

x = np.zeros((80, 4), "float32"); y = np.zeros((80, 1), "float32")
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[Retrace()])
"""


def test_tensorflow_retracing_warnings_become_notices(write_script):
    ended, events = run_script(write_script(RETRACING))
    notices = [n for n in of(events, Notice) if n.kind == "retracing"]
    assert notices and "triggered tf.function retracing" in notices[0].text
    assert ended.status == "finished"


def test_an_xla_compiled_model_trains_and_the_guard_says_why_it_cannot_recompute(write_script):
    # XLA cannot assign the shapeless variables that keep the batch: the guard must not
    # try (it would fail the step at run time), yet still stop and name what it can.
    script = NAN_AT_STEP_7.replace(
        'm.compile("sgd", "mse")', 'm.compile("sgd", "mse", jit_compile=True)'
    )
    ended, events = run_script(write_script(script), options=RunOptions(on_nan="stop"))
    bad = of(events, NonFinite)[0]
    assert ended.exit_code == NAN_EXIT_CODE and bad.global_step == 7
    assert bad.layer == "" and "XLA" in bad.detail
    assert bad.variable.endswith("out/kernel")
