"""A run's hyperparameters are recorded by themselves: run.json and TensorBoard's HParams data."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import api_pb2, metadata

from tests.engine.helpers import console, of, run_script
from tfstudio.core.events import FitStarted, Hyperparameters
from tfstudio.core.hparams import read_hparams
from tfstudio.core.options import RunOptions
from tfstudio.core.runs import read_run_json

pytestmark = pytest.mark.tf

FIT = """
import sys
import numpy as np, keras
keras.utils.set_random_seed(7)
rng = np.random.default_rng(0)
x = rng.normal(size=(96, 3)).astype("float32")
y = rng.normal(size=(96, 1)).astype("float32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)], name="tiny")
model.compile(keras.optimizers.Adam(learning_rate=0.003), "mse", metrics=["mae"])
model.fit(x, y, batch_size=16, epochs=2, validation_split=0.25, verbose=0)
if "--again" in sys.argv:
    model.fit(x, y, batch_size=16, epochs=3, validation_split=0.25, verbose=0)
"""

FIT_EXPECTED = {
    "optimizer": "Adam",
    "loss": "mse",
    "metrics": "mae",
    "batch_size": 16,
    "epochs": 2,
    "steps_per_epoch": 5,  # 96 * 0.75 = 72 samples in batches of 16
    "validation": "validation_split=0.25",
    "model": "tiny",
    "model.class": "Sequential",
    "model.params": 4,  # a 3 -> 1 Dense: 3 weights and a bias
    "seed": 7,
    "args": "--again --tag 'two words'",
    "optimizer.beta_1": 0.9,
    "optimizer.amsgrad": False,
}


def _tb_hparams(run_dir) -> tuple[dict, int | None]:
    """The run's hparams and session status as TensorBoard's own reader finds them."""
    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    acc.Reload()
    content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
    values = {}
    for name, value in start.hparams.items():
        kind = value.WhichOneof("kind")
        values[name] = getattr(value, kind)
    status = None
    if metadata.SESSION_END_INFO_TAG in content:
        end = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
        status = end.status
    return values, status


def test_a_fit_records_its_hyperparameters_where_tensorboard_finds_them(write_script, tmp_path):
    logdir = tmp_path / "runs"
    script = write_script(FIT)
    ended, events = run_script(
        script, ["--again", "--tag", "two words"], options=RunOptions(logdir=str(logdir))
    )
    assert ended.status == "finished", (ended.message, console(events)[-2000:])
    [run_dir] = list(logdir.iterdir())
    sent = of(events, Hyperparameters)
    assert sent, "no Hyperparameters event"
    # each event is sent before the fit it describes starts (a viewer has them first)
    first_fit = events.index(of(events, FitStarted)[0])
    assert any(events.index(e) < first_fit for e in sent)
    hp = sent[-1].values

    for key, want in FIT_EXPECTED.items():
        assert hp[key] == want, key
    assert hp["optimizer.learning_rate"] == 0.003  # the float32 variable's shortest decimal
    assert hp["optimizer.epsilon"] == pytest.approx(1e-7)
    import keras
    import tensorflow as tf

    assert hp["tensorflow"] == tf.__version__ and hp["keras"] == keras.__version__
    # the second fit differs only in its epochs: that key, prefixed
    assert hp["fit2.epochs"] == 3
    assert [k for k in hp if k.startswith("fit2.")] == ["fit2.epochs"]
    assert all(isinstance(v, str | int | float | bool) for v in hp.values())

    # run.json and the reader say the same
    assert read_run_json(run_dir)["hparams"] == hp
    assert read_hparams(run_dir) == hp

    # TensorBoard's own reader: the first fit's settings and the run's success
    tb, status = _tb_hparams(run_dir)
    for key, want in FIT_EXPECTED.items():
        assert tb[key] == (float(want) if type(want) is int else want), key
    assert tb["optimizer.learning_rate"] == 0.003
    assert "fit2.epochs" not in tb  # written at the first fit (TensorBoard keeps the first)
    assert status == api_pb2.STATUS_SUCCESS

    # TensorBoard's HParams dashboard (its plugin's backend) lists the run with its metrics
    experiment, groups = _dashboard(logdir)
    assert "optimizer.learning_rate" in {h.name for h in experiment.hparam_infos}
    assert "epoch/val_loss" in {m.name.tag for m in experiment.metric_infos}
    [group] = groups.session_groups
    assert group.hparams["optimizer"].string_value == "Adam"
    assert group.hparams["batch_size"].number_value == 16.0
    assert [s.status for s in group.sessions] == [api_pb2.STATUS_SUCCESS]


def _dashboard(logdir):
    """What TensorBoard's HParams dashboard asks its backend: the experiment and sessions."""
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.hparams import get_experiment, hparams_plugin, list_session_groups

    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(logdir))
    tb = base_plugin.TBContext(logdir=str(logdir), multiplexer=multiplexer, data_provider=provider)
    backend = hparams_plugin.HParamsPlugin(tb)._context
    ctx = context.RequestContext()
    request = api_pb2.GetExperimentRequest(include_metrics=True)
    experiment = get_experiment.Handler(ctx, backend, "", request).run()
    statuses = [api_pb2.STATUS_UNKNOWN, api_pb2.STATUS_SUCCESS, api_pb2.STATUS_FAILURE]
    listing = api_pb2.ListSessionGroupsRequest(
        start_index=0, slice_size=10, allowed_statuses=statuses
    )
    groups = list_session_groups.Handler(ctx, backend, "", listing).run()
    return experiment, groups


DATASET = """
import numpy as np, tensorflow as tf, keras
x = np.zeros((40, 2), "float32"); y = np.zeros((40, 1), "float32")
train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(40, seed=1).batch(8).prefetch(2)
val = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
inputs = keras.Input((2,))
model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
model.compile(
    optimizer=keras.optimizers.SGD(schedule, momentum=0.9),
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.AUC(name="auc"), "accuracy"],
)
model.fit(train, validation_data=val, epochs=1, verbose=0)
raise RuntimeError("boom")
"""


def test_a_dataset_fit_with_a_schedule_and_a_failed_run(write_script, tmp_path):
    logdir = tmp_path / "runs"
    ended, events = run_script(write_script(DATASET), options=RunOptions(logdir=str(logdir)))
    assert ended.status == "failed"
    [run_dir] = list(logdir.iterdir())
    hp = read_hparams(run_dir)
    assert hp["batch_size"] == 8  # the dataset's batch()
    assert hp["steps_per_epoch"] == 5
    assert hp["validation"] == "validation_data"
    assert hp["optimizer"] == "SGD"
    assert hp["optimizer.momentum"] == pytest.approx(0.9)
    assert hp["optimizer.learning_rate.schedule"] == "ExponentialDecay"
    assert hp["optimizer.learning_rate.initial_learning_rate"] == pytest.approx(0.1)
    assert hp["optimizer.learning_rate.decay_steps"] == 10
    assert "optimizer.learning_rate" not in hp
    assert hp["loss"] == "BinaryCrossentropy"
    assert hp["loss.from_logits"] is True
    assert hp["metrics"] == "auc,accuracy"
    assert hp["model.class"] == "Functional" and hp["model.params"] == 3
    assert "seed" not in hp and hp["args"] == ""
    tb, status = _tb_hparams(run_dir)
    assert tb["optimizer.learning_rate.schedule"] == "ExponentialDecay"
    assert status == api_pb2.STATUS_FAILURE


LOOP = """
import numpy as np, tensorflow as tf, keras
tf.random.set_seed(3)
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
opt = keras.optimizers.RMSprop(learning_rate=0.01)
x = np.ones((8, 2), "float32"); y = np.ones((8, 1), "float32")
for step in range(4):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_a_custom_loop_records_what_is_known(write_script, tmp_path):
    logdir = tmp_path / "runs"
    ended, events = run_script(
        write_script(LOOP), ["--x", "1"], options=RunOptions(logdir=str(logdir))
    )
    assert ended.status == "finished", (ended.message, console(events)[-2000:])
    [run_dir] = list(logdir.iterdir())
    hp = read_hparams(run_dir)
    assert hp["optimizer"] == "RMSprop"
    assert hp["optimizer.learning_rate"] == pytest.approx(0.01)
    assert hp["seed"] == 3 and hp["args"] == "--x 1"
    assert "batch_size" not in hp and "epochs" not in hp  # a loop has none: nothing invented
    tb, status = _tb_hparams(run_dir)  # written at the run's end
    assert tb["optimizer"] == "RMSprop" and status == api_pb2.STATUS_SUCCESS


def test_a_model_built_by_its_first_step_gets_its_size_after_the_fit(write_script, tmp_path):
    script = write_script(
        """
        import numpy as np, keras
        model = keras.Sequential([keras.layers.Dense(2), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        model.fit(np.zeros((8, 3)), np.zeros((8, 1)), epochs=1, verbose=0)
        """
    )
    ended, events = run_script(script, options=RunOptions(record=False))
    assert ended.status == "finished", (ended.message, console(events)[-2000:])
    sent = of(events, Hyperparameters)
    assert "model.params" not in sent[0].values  # unbuilt at the fit's start: not built for us
    assert sent[-1].values["model.params"] == 3 * 2 + 2 + 2 * 1 + 1
    assert sent[-1].values["batch_size"] == 32  # Keras's default
    assert sent[-1].values["steps_per_epoch"] == 1
    assert np.all([isinstance(e.values, dict) for e in sent])


GAN = """
import numpy as np, tensorflow as tf, keras

class Pair(keras.Model):
    def __init__(self):
        super().__init__()
        self.g = keras.layers.Dense(1)
        self.d = keras.layers.Dense(1)

    def compile(self, d_optimizer, g_optimizer):
        super().compile(loss="mse")
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer

    def call(self, x):
        return self.d(self.g(x))

    def train_step(self, data):
        x, y = data
        for opt, layer in ((self.d_optimizer, self.d), (self.g_optimizer, self.g)):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((self(x) - y) ** 2)
            grads = tape.gradient(loss, layer.trainable_variables)
            opt.apply_gradients(zip(grads, layer.trainable_variables))
        return {"loss": loss}

model = Pair()
model(np.zeros((1, 2), "float32"))
model.compile(keras.optimizers.Adam(0.002), keras.optimizers.SGD(0.05))
model.fit(np.zeros((8, 2), "float32"), np.zeros((8, 1), "float32"), batch_size=4, verbose=0)
"""


def test_a_model_with_its_own_compile_records_its_own_optimizers(write_script, tmp_path):
    ended, events = run_script(write_script(GAN), options=RunOptions(record=False))
    assert ended.status == "finished", ended.message
    hp = of(events, Hyperparameters)[-1].values
    assert hp["d_optimizer"] == "Adam" and hp["g_optimizer"] == "SGD"
    assert hp["d_optimizer.learning_rate"] == pytest.approx(0.002)
    assert hp["g_optimizer.learning_rate"] == pytest.approx(0.05)
    assert "optimizer" not in hp  # Keras's default RMSprop, which this train_step never uses
    assert hp["model.class"] == "Pair" and hp["batch_size"] == 4 and hp["loss"] == "mse"


def test_lr_option_is_the_first_fits_learning_rate(write_script):
    script = write_script(
        """
        import numpy as np, keras
        schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(schedule), "mse")
        model.fit(np.zeros((8, 2)), np.zeros((8, 1)), epochs=1, verbose=0)
        """
    )
    ended, events = run_script(script, options=RunOptions(record=False, lr=0.05))
    assert ended.status == "finished", ended.message
    hp = of(events, Hyperparameters)[-1].values
    assert hp["optimizer.learning_rate"] == 0.05  # --lr replaced the schedule for this fit
    assert not [k for k in hp if k.startswith("optimizer.learning_rate.")]
