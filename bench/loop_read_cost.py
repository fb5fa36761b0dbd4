"""What the graph-loop reader's beat costs, old buffer layout against new, side by side.

The small MLP of ``overhead.py --loop`` trains as a ``tf.function`` on this thread (a
norm twin every 10th step, as tfstudio runs it); every step writes into three sets of
ring buffers at once:

- ``old``: the layout before 2026-11-29: the losses (16,384 rows), the norm rows'
  ``l2_loss`` columns (16,384 rows) and their step numbers (16,384 int64), read with
  four eager ops a beat (the reader code of that commit, copied here);
- ``new``: tfstudio's :class:`~tfstudio.engine.loops.ring.GraphRing`: the losses and a
  4,096-row norm ring whose last two columns hold each row's step number, three reads;
- ``new'``: a second ``GraphRing``, the control: how far two identical ways land apart.

A reader thread wakes every ``READ_EVERY`` seconds, as tfstudio's does, and reads one
of the three (in a fresh random order every three beats), the steps since the last
beat, timing the read's CPU on its own thread clock (the first TensorFlow op of a beat
is the dearest: the caches are the training's). Prints each way's mean and median CPU
per read, ``new/old``, and the control ``new'/new``.

    python bench/loop_read_cost.py [--seconds 45]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio
sys.path.insert(0, str(Path(__file__).resolve().parent))

OLD_RING = 16384


class OldRing:
    """The buffers and the reader of commit 5e820c6 (copied: the way measured against)."""

    def __init__(self, tf: Any, parts: int) -> None:
        import numpy as np

        self.np = np
        self.tf = tf
        self.losses = tf.Variable(tf.zeros([OLD_RING], tf.float32), trainable=False)
        self.parts = tf.Variable(tf.zeros([OLD_RING, parts], tf.float32), trainable=False)
        none = tf.fill([OLD_RING], tf.constant(-1, tf.int64))
        self.norm_steps = tf.Variable(none, trainable=False)
        self.counter = tf.Variable(0, dtype=tf.int64, trainable=False)

    def write(self, value: Any, parts: list[Any] | None) -> None:
        """At trace time: the ops the old layout added to a step."""
        tf = self.tf
        index = tf.raw_ops.ReadVariableOp(resource=self.counter.handle, dtype=tf.int64)
        slot = index % OLD_RING
        scatter = tf.raw_ops.ResourceScatterUpdate
        written = [scatter(resource=self.losses.handle, indices=slot, updates=value)]
        if parts is not None:
            row = tf.stack(parts)
            written.append(scatter(resource=self.parts.handle, indices=slot, updates=row))
            written.append(scatter(resource=self.norm_steps.handle, indices=slot, updates=index))
        with tf.control_dependencies(written):
            self.counter.assign_add(1, read_value=False)

    def read(self, known: int) -> tuple[int, list[float], list[float]]:
        """The old reader (eager branch)."""
        from tfstudio.engine.probes.values import read_handle

        np, tf = self.np, self.tf
        count = int(read_handle(self.counter.handle, tf.int64))
        if count <= known:
            return count, [], []
        losses = read_handle(self.losses.handle, tf.float32)
        steps = read_handle(self.norm_steps.handle, tf.int64)
        parts = read_handle(self.parts.handle, tf.float32)
        lost = max(0, count - known - OLD_RING)
        first = known + lost
        out_losses = [math.nan] * lost
        out_norms = [math.nan] * lost
        if first < count:
            slots = np.arange(first, count) % OLD_RING
            out_losses.extend(losses[slots].tolist())
            norms = np.sqrt(2.0 * parts[slots].astype(np.float64).sum(axis=1))
            norms[steps[slots] != np.arange(first, count)] = math.nan
            out_norms.extend(norms.tolist())
        return count, out_losses, out_norms


def main() -> None:
    """Train, read beside it, print the reads' CPU per way."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=45.0, help="seconds of training")
    args = parser.parse_args()

    import tensorflow as tf
    from loop_overhead import mlp

    from tfstudio.engine.loops.ring import NORM_EVERY, READ_EVERY, GraphRing

    x, y, model, opt, loss_fn = mlp()
    variables = model.trainable_variables
    old = OldRing(tf, len(variables))
    new, control = GraphRing(), GraphRing()

    def make(norm: bool) -> Any:
        def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, variables)
            opt.apply_gradients(zip(grads, variables, strict=True))
            pairs = list(zip(variables, grads, strict=True))
            old.write(loss, [tf.nn.l2_loss(g) for g in grads] if norm else None)
            new.write(tf, loss, pairs, norm)
            control.write(tf, loss, pairs, norm)
            return loss

        return tf.function(step)

    plain, twin = make(False), make(True)
    plain(x, y).numpy()
    twin(x, y).numpy()
    ways = {"old": old.read, "new": new.read, "new'": control.read}
    cpu: dict[str, list[float]] = {w: [] for w in ways}
    steps_read: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        order = random.Random(0)
        names: list[str] = []
        known = int(new.read(0)[0])
        while not stop.wait(READ_EVERY):
            if not names:
                names = list(ways)
                order.shuffle(names)
            name = names.pop()
            t = time.thread_time()
            count = ways[name](known)[0]
            cpu[name].append(time.thread_time() - t)
            steps_read.append(count - known)
            known = count

    thread = threading.Thread(target=reader, name="reader")
    thread.start()
    calls, end = 0, time.monotonic() + args.seconds
    while time.monotonic() < end:
        calls += 1
        (twin if calls % NORM_EVERY == 0 else plain)(x, y)
    stop.set()
    thread.join()

    for name, times in cpu.items():
        print(
            f"{name:5} {len(times)} reads: mean {statistics.fmean(times) * 1e6:7.1f} us CPU, "
            f"median {statistics.median(times) * 1e6:7.1f} us"
        )
    mean = {w: statistics.fmean(t) for w, t in cpu.items()}
    print(
        f"{calls} steps in {args.seconds:g} s, {statistics.median(steps_read):.0f} steps a read "
        f"(median); machine: {os.cpu_count()} cores"
    )
    print("control new'/new = %.3f" % (mean["new'"] / mean["new"]))
    print(f"reader: new/old = {mean['new'] / mean['old']:.3f}")


if __name__ == "__main__":
    main()
