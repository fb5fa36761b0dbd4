"""Stop ends training at the next batch boundary; pause holds it there."""

from __future__ import annotations

import time

import pytest

from tests.conftest import wait_for
from tests.engine.helpers import console, of
from tfstudio.core.channel import Channel
from tfstudio.core.commands import Pause, Resume, Stop
from tfstudio.core.events import EpochEnded, FitEnded, RunEnded, StepEnded
from tfstudio.engine.session import STOPPED_EXIT_CODE, TrainingSession

pytestmark = pytest.mark.tf

LONG_FIT = """
import numpy as np, keras

class CountValidation(keras.callbacks.Callback):
    def on_test_begin(self, logs=None):
        print("validation ran")

x = np.zeros((6400, 4), "float32"); y = np.zeros((6400, 1), "float32")
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=8, epochs=50, verbose=0, validation_data=(x[:64], y[:64]),
      callbacks=[CountValidation()])
print("code after fit ran")
"""


class Collector:
    """Drains a channel as a UI would, keeping everything seen."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.events: list[object] = []

    def poll(self) -> list[object]:
        self.events.extend(self.channel.drain())
        return self.events

    def steps(self) -> list[StepEnded]:
        return of(self.poll(), StepEnded)

    def ended(self) -> RunEnded | None:
        found = of(self.poll(), RunEnded)
        return found[0] if found else None


def start(path) -> tuple[TrainingSession, Collector]:
    channel = Channel()
    session = TrainingSession(path, (), channel)
    session.start()
    return session, Collector(channel)


def test_stop_ends_within_one_batch_and_skips_validation_and_the_rest(write_script):
    session, seen = start(write_script(LONG_FIT))
    wait_for(lambda: len(seen.steps()) >= 3)
    seen.channel.send(Stop())
    session.pump.flush()  # what training emitted before the command, not 20 ms of it later
    stop_sent_at = seen.steps()[-1].global_step
    ended = session.join(timeout=60)
    assert ended is not None and ended.status == "stopped"
    assert ended.exit_code == STOPPED_EXIT_CODE
    events = seen.poll()
    last = seen.steps()[-1].global_step
    # the command is applied at the first batch end after it arrives
    assert last - stop_sent_at <= 2
    assert of(events, FitEnded)[-1].stopped
    assert "validation ran" not in console(events)
    assert "code after fit ran" not in console(events)
    # Keras still closes the (partial) epoch, but without a validation pass
    assert all(not k.startswith("val_") for e in of(events, EpochEnded) for k in e.metrics)
    assert isinstance(events[-1], RunEnded)


def test_stop_between_fits_interrupts_the_script(write_script):
    path = write_script(
        """
        import time
        print("preparing data", flush=True)
        while True:
            time.sleep(0.005)
        """
    )
    session, seen = start(path)
    wait_for(lambda: "preparing data" in console(seen.poll()))
    session.stop()
    ended = session.join(timeout=30)
    assert ended is not None and ended.status == "stopped"


def test_pause_holds_at_a_batch_boundary_and_stop_releases_it(write_script):
    session, seen = start(write_script(LONG_FIT))
    wait_for(lambda: len(seen.steps()) >= 2)
    seen.channel.send(Pause())
    wait_for(lambda: "Paused." in console(seen.poll(), "tfstudio"))
    held = seen.steps()[-1].global_step
    time.sleep(0.3)  # let the training thread sit in the pause
    assert seen.steps()[-1].global_step == held  # nothing trained while paused
    seen.channel.send(Resume())
    wait_for(lambda: seen.steps()[-1].global_step > held + 5)
    seen.channel.send(Pause())
    wait_for(lambda: console(seen.poll(), "tfstudio").count("Paused.") == 2)
    session.stop()  # a paused run must still stop
    ended = session.join(timeout=30)
    assert ended is not None and ended.status == "stopped"


def test_stop_during_the_validation_pass_ends_it_too(write_script):
    path = write_script(
        """
        import numpy as np, keras

        class Progress(keras.callbacks.Callback):
            def on_test_begin(self, logs=None):
                print("validation started", flush=True)

            def on_test_batch_end(self, batch, logs=None):
                print(f"val batch {batch}", flush=True)

        x = np.zeros((64, 4), "float32"); y = np.zeros((64, 1), "float32")
        vx = np.zeros((20000, 4), "float32"); vy = np.zeros((20000, 1), "float32")
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        m.fit(x, y, batch_size=32, epochs=3, verbose=0, validation_data=(vx, vy),
              validation_batch_size=2, callbacks=[Progress()])
        """
    )
    session, seen = start(path)
    wait_for(lambda: "val batch 20" in console(seen.poll()))
    session.stop()
    ended = session.join(timeout=60)
    assert ended is not None and ended.status == "stopped"
    text = console(seen.poll())
    assert text.count("validation started") == 1
    assert "val batch 9999" not in text  # 10,000 validation batches were not all run
    assert all(not k.startswith("val_") for e in of(seen.events, EpochEnded) for k in e.metrics)
