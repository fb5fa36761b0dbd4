"""What the NaN guard's batch keeping costs a graph-mode step: twins, steps interleaved.

In one process, twins of the small MLP of ``bench_model.py`` (seeded: same weights,
same data), each a ``fit`` run as a generator (``interleave.stepped_fit``), single
steps called in a fresh random order every round and timed:

- **bare A**, **bare B**: plain Keras (their ratio is the control: the method's
  resolution in this run);
- **default**: the train step hooked as a default run hooks it (trace counting and
  an unarmed :class:`~tfstudio.engine.nan_guard.BatchKeeper`: no op added);
- **armed**: the keeper armed (``--nan-batch``, or after a first NaN): every step
  copies its batch into variables;
- **cond**: the previous design, kept here for comparison: the batch copied inside a
  ``tf.cond`` on the step's scalar results being finite.

Only the train step differs between the sides (no callback, no pump): the figures are
the guard's in-graph cost alone.

    python bench/nan_guard.py [--rounds 4000]

Prints each side's mean step and its extra microseconds over bare, then
``control: bare/bare = C``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from interleave import Interleaved, stepped_fit  # noqa: E402
from overhead import STEPS_PER_EPOCH, machine_line, steps_of, twin  # noqa: E402


def cond_keeper() -> Any:
    """The previous design: copy the batch only when a scalar result is not finite."""
    import tensorflow as tf

    from tfstudio.engine.nan_guard import BatchKeeper

    class CondKeeper(BatchKeeper):
        def _keep_traced(self, data: Any, logs: Any = None) -> None:
            flat = tf.nest.flatten(data)
            if self._vars is None:
                with tf.init_scope():
                    self._vars = [
                        tf.Variable(
                            tf.zeros([0] * len(t.shape), dtype=t.dtype),
                            shape=tf.TensorShape(None),
                            trainable=False,
                        )
                        for t in flat
                    ]
                self._structure = data
            variables = self._vars

            def copy() -> Any:
                for var, tensor in zip(variables, flat, strict=True):
                    var.assign(tensor)
                return tf.constant(True)

            checks = [
                tf.reduce_all(tf.math.is_finite(t))
                for t in tf.nest.flatten(logs)
                if isinstance(t, tf.Tensor) and t.dtype.is_floating and t.shape.rank == 0
            ]
            finite = checks[0] if len(checks) == 1 else tf.reduce_all(tf.stack(checks))
            tf.cond(finite, lambda: tf.constant(False), copy)

    return CondKeeper(armed=True)


def hooked(kind: str, epochs: int) -> Any:
    """A twin whose train step is hooked with the guard of ``kind``, as a stepped fit."""
    from tfstudio.engine.execution import install_step_hook
    from tfstudio.engine.nan_guard import BatchKeeper

    model, data = twin()
    if kind == "cond":
        keeper = cond_keeper()
        original = model.train_step

        def train_step(batch: Any) -> Any:  # the old hook passed the step's results too
            logs = original(batch)
            keeper._keep_traced(batch, logs)  # noqa: SLF001
            return logs

        object.__setattr__(model, "train_step", train_step)
        model.make_train_function(force=True)
    elif kind != "bare":
        install_step_hook(model, BatchKeeper(armed=kind == "armed"))
    return stepped_fit(model, data, epochs=epochs, steps_per_epoch=STEPS_PER_EPOCH)


def main() -> None:
    """Interleave the sides and print their extra cost per step."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4000, help="interleaved steps per side")
    args = parser.parse_args()
    epochs = -(-(args.rounds + 40) // STEPS_PER_EPOCH) + 1
    sides = {"bare A": "bare", "bare B": "bare", "default": "default"}
    sides |= {"armed": "armed", "cond": "cond"}
    gens = {name: hooked(kind, epochs) for name, kind in sides.items()}
    bench = Interleaved({name: steps_of(gen) for name, gen in gens.items()}, {}, seed=0)
    for name in gens:
        bench.warm(name, 30)
    bench.run(args.rounds)
    print(machine_line())
    bare = bench.mean("bare A", "bare B")
    for name in sides:
        m = statistics.fmean(bench.times[name])
        print(f"{name}: {m * 1e6:.1f} us a step, {(m - bare) * 1e6:+.1f} us over bare")
    print(f"control: bare/bare = {bench.mean('bare A') / bench.mean('bare B'):.4f}")
    os._exit(0)  # the stepped fits are left unfinished


if __name__ == "__main__":
    main()
