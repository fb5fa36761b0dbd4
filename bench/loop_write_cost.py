"""What recording a graph loop's step on the device costs, variant by variant, side by side.

``tf.function`` train steps of the small MLP that ``overhead.py --loop`` uses, each
traced ``--traces`` times, all called in a fresh random order every round, one step
each, every call timed (the method of ``loop_overhead.py``). No tfstudio code runs:
this isolates the device ops. Variants:

- ``bare``: the user's step alone;
- ``loss``: the loss written into the ring buffer (counter read, ``% RING``, a scalar
  ``ResourceScatterUpdate``, the counter's increment);
- ``columns``: what tfstudio writes: the loss and one ``l2_loss`` per gradient, each in
  its own column of the row (the reader adds them up);
- ``add_n``: the loss and the ``add_n`` of the ``l2_loss``es, one column (the write
  before 2026-11-22);
- ``queue``: the ``columns`` row through a ``tf.queue.FIFOQueue`` (one enqueue op);
- ``returned``: no write: the bare step's returned loss kept by a Python wrapper (a
  list the loop stacks and reads every 200 rounds, untimed: a reader thread's work),
  what a design that takes each step's loss from the step function's result would pay
  instead of the write;
- ``returned2``: the same again, a second arm of identical code (its distance from
  ``returned`` is the method's resolution).

Prints each variant's ratio of mean step times to bare (``bare/this``), and a control:
half the bare traces against the other half.

    python bench/loop_write_cost.py [--steps 1500] [--traces 6]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

RING = 16384


def main() -> None:
    """Time every variant, interleaved, and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500, help="steps per trace")
    parser.add_argument("--traces", type=int, default=6, help="traces per variant")
    args = parser.parse_args()

    import tensorflow as tf
    from loop_overhead import mlp

    x, y, model, opt, loss_fn = mlp()
    counter = tf.Variable(0, dtype=tf.int64)
    narrow = tf.Variable(tf.zeros([RING]))
    one = tf.Variable(tf.zeros([RING, 2]))
    wide = tf.Variable(tf.zeros([RING, 7]))
    queue = tf.queue.FIFOQueue(1 << 20, [tf.float32] * 7, shapes=[[]] * 7)

    def write(buffer: tf.Variable, row: tf.Tensor) -> None:
        index = tf.raw_ops.ReadVariableOp(resource=counter.handle, dtype=tf.int64)
        written = tf.raw_ops.ResourceScatterUpdate(
            resource=buffer.handle, indices=index % RING, updates=row
        )
        with tf.control_dependencies([written]):
            counter.assign_add(1, read_value=False)

    def make(kind: str) -> tf.types.experimental.PolymorphicFunction:
        def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            parts = [tf.nn.l2_loss(g) for g in grads]
            if kind == "loss":
                write(narrow, loss)
            elif kind == "columns":
                write(wide, tf.stack([loss, *parts]))
            elif kind == "add_n":
                write(one, tf.stack([loss, tf.add_n(parts)]))
            elif kind == "queue":
                queue.enqueue([loss, *parts])
            return loss  # unused l2_loss ops (bare, loss) are pruned from the graph

        return tf.function(step)

    kinds = ["bare", "loss", "columns", "add_n", "queue", "returned", "returned2"]
    kept: list[tf.Tensor] = []  # the returned losses, read in bulk now and then

    def keeping(fn: Callable[..., tf.Tensor]) -> Callable[..., tf.Tensor]:
        def call(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            loss = fn(x, y)
            kept.append(loss)
            return loss

        return call

    def arm(kind: str) -> Callable[..., tf.Tensor]:
        return keeping(make("bare")) if kind.startswith("returned") else make(kind)

    calls = [(k, t, arm(k)) for k in kinds for t in range(args.traces)]
    for _, _, fn in calls:
        fn(x, y).numpy()  # trace (not timed)
    times: dict[tuple[str, int], list[float]] = {(k, t): [] for k, t, _ in calls}
    order = random.Random(0)
    clock = time.perf_counter
    for i in range(args.steps):
        order.shuffle(calls)
        for k, t, fn in calls:
            start = clock()
            result = fn(x, y)
            times[k, t].append(clock() - start)
            del result  # freed after the clock, in every arm (the returned ones keep theirs)
        if i % 200 == 199:  # nobody reads the queue here: empty it now and then
            queue.dequeue_many(int(queue.size()))
            if kept:  # the returned losses' read: one stack, one copy
                tf.stack(kept).numpy()
                kept.clear()

    def mean(kind: str, traces: range) -> float:
        return statistics.fmean([v for t in traces for v in times[kind, t]])

    every = range(args.traces)
    bare = mean("bare", every)
    for k in kinds:
        step_time = mean(k, every)
        print(f"{k:8s} mean step {step_time * 1e6:7.1f} us  bare/this {bare / step_time:.3f}")
    half = args.traces // 2
    control = mean("bare", range(half, args.traces)) / mean("bare", range(half))
    print(f"control bare/bare {control:.3f}")


if __name__ == "__main__":
    main()
