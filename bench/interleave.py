"""Shared method of the overhead benchmarks: single steps of twins, interleaved in random order.

On the project's shared 2-core VM a model's step time jumps between regimes for
seconds at a time, and each trace of a ``tf.function`` has its own small, persistent
speed. Comparing whole fits (or rounds of hundreds of steps) picks both up; comparing
single steps called a millisecond apart, in a fresh random order every round, on
several twins per side, does not. A bare/bare control (two bare twins compared the
same way) shows the resolution the method reached in that run.

- :func:`stepped_fit`: what ``keras.Model.fit`` does, one step per ``next()``.
- :class:`Interleaved`: calls each side's step once per round in random order and
  times every call.
- :func:`thread_cpu`: CPU seconds of a live thread (to charge helper threads).
- :class:`OwnClock`: a clock that runs only while one side's steps run.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


def thread_cpu(thread: threading.Thread | None) -> float:
    """CPU seconds a live thread has used (0 for none or a dead one)."""
    if thread is None or thread.ident is None or not thread.is_alive():
        return 0.0
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def stepped_fit(
    model: Any,
    x: Any = None,
    epochs: int = 1,
    steps_per_epoch: int | None = None,
    callbacks: Any = None,
    initial_epoch: int = 0,
    verbose: int = 0,
) -> Iterator[None]:
    """``model.fit(x, ...)`` on a ``tf.data`` input, as a generator: each ``next()`` is one step.

    Per step it does what Keras 3's TensorFlow trainer does in ``fit`` (the batch hooks
    of the fit's ``CallbackList``, History included, around one call of the model's
    ``train_function``); epoch boundaries happen inside the step that crosses them,
    and the fit's end after the last step. Validation is not supported (not needed
    here). Its signature lets :class:`tfstudio.engine.instrument.FitInterceptor` wrap
    it as it wraps ``fit``, so a monitored twin gets its ``StudioCallback`` the real way.
    """
    from keras.src import callbacks as callbacks_module
    from keras.src.backend.tensorflow.trainer import TFEpochIterator

    epoch_iterator = TFEpochIterator(
        x=x,
        steps_per_epoch=steps_per_epoch,
        shuffle=False,
        distribute_strategy=model.distribute_strategy,
        steps_per_execution=model.steps_per_execution,
    )
    model._maybe_symbolic_build(iterator=epoch_iterator)
    epoch_iterator.reset()
    if not isinstance(callbacks, callbacks_module.CallbackList):
        callbacks = callbacks_module.CallbackList(
            callbacks,
            add_history=True,
            add_progbar=verbose != 0,
            verbose=verbose,
            epochs=epochs,
            steps=epoch_iterator.num_batches,
            model=model,
        )
    model.stop_training = False
    model.make_train_function()
    callbacks.on_train_begin()
    logs: Any = {}
    for epoch in range(initial_epoch, epochs):
        model.reset_metrics()
        callbacks.on_epoch_begin(epoch)
        with epoch_iterator.catch_stop_iteration():
            for begin_step, end_step, iterator in epoch_iterator:
                callbacks.on_train_batch_begin(begin_step)
                logs = model.train_function(iterator)
                callbacks.on_train_batch_end(end_step, logs)
                if model.stop_training:
                    break
                yield
        callbacks.on_epoch_end(epoch, dict(model._get_metrics_result_or_logs(logs)))
        if model.stop_training:
            break
    model.optimizer.finalize_variable_values(model.trainable_weights)
    callbacks.on_train_end(logs=None)


class OwnClock:
    """A clock (seconds) that advances only between :meth:`enter` and :meth:`leave`.

    Interleaved with other twins, a monitored twin's wall clock also runs through
    everyone else's steps; what schedules samples by time (the inspector's budget)
    must see only its own twin's time, as it would in a run of its own.
    """

    def __init__(self) -> None:
        self._total = 0.0
        self._since: float | None = None

    def enter(self) -> None:
        """The twin's step starts."""
        self._since = time.perf_counter()

    def leave(self) -> None:
        """The twin's step ended."""
        if self._since is not None:
            self._total += time.perf_counter() - self._since
            self._since = None

    def __call__(self) -> float:
        """Seconds of the twin's own steps so far (the current one included)."""
        since = self._since
        return self._total + (time.perf_counter() - since if since is not None else 0.0)


class Interleaved:
    """Times single steps of several sides, called in a fresh random order every round.

    Args:
        steps: ``{name: step}``; ``step()`` runs one training step of that twin.
        clocks: ``{name: OwnClock}`` for sides whose own time must be kept apart.
        seed: the order's random seed.
    """

    def __init__(
        self,
        steps: dict[str, Callable[[], object]],
        clocks: dict[str, OwnClock] | None = None,
        seed: int = 0,
    ) -> None:
        self.steps = steps
        self.clocks = clocks or {}
        self.times: dict[str, list[float]] = {name: [] for name in steps}
        self._order = random.Random(seed)

    def warm(self, name: str, steps: int) -> None:
        """``steps`` untimed steps of one side (tracing, a first sample), its own clock running."""
        own = self.clocks.get(name)
        for _ in range(steps):
            if own is not None:
                own.enter()
            self.steps[name]()
            if own is not None:
                own.leave()

    def run(self, rounds: int) -> None:
        """``rounds`` rounds: every side's step once per round, each call timed."""
        names = list(self.steps)
        clock = time.perf_counter
        for _ in range(rounds):
            self._order.shuffle(names)
            for name in names:
                own = self.clocks.get(name)
                if own is not None:
                    own.enter()
                t = clock()
                self.steps[name]()
                self.times[name].append(clock() - t)
                if own is not None:
                    own.leave()

    def mean(self, *names: str) -> float:
        """Mean step time (s) pooled over the named sides."""
        return statistics.fmean(t for name in names for t in self.times[name])

    def median(self, *names: str) -> float:
        """Median step time (s) pooled over the named sides."""
        return statistics.median(t for name in names for t in self.times[name])

    def report(self, ways: dict[str, list[str]], labels: dict[str, str], base: str) -> None:
        """Print each way's mean and median step time (its sides pooled), both signed
        against way ``base``'s (a bench's reference way: TensorFlow's own call, bare).

        Args:
            ways: way -> the names of its sides (e.g. one per trace).
            labels: way -> what it is, printed beside it.
        """
        mean_0, med_0 = self.mean(*ways[base]), self.median(*ways[base])
        for way, names in ways.items():
            mean, med = self.mean(*names), self.median(*names)
            print(
                f"{way} ({labels[way]}): mean {mean * 1e6:.1f} us ({(mean - mean_0) * 1e6:+.1f}), "
                f"median {med * 1e6:.1f} us ({(med - med_0) * 1e6:+.1f})"
            )
