"""The graph ring buffer: a ``tf.function`` step's loss and gradient norm, kept on the device.

At trace time a step gets a write of its loss into a device-side ring (a
``tf.Variable[RING]`` per series, made in ``init_scope`` so a retrace reuses it) at a step
counter, then the counter's increment. A step that measures the gradient norm (a twin's)
also writes a row of a smaller ring: the gradients' ``l2_loss`` summed and the step's
number in two float32 columns (each part exact), so a reader tells this step's norm from
one a lap of the ring ago. A reader thread reads the buffers every ``READ_EVERY`` s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

RING = 16384  # steps a graph series' buffer holds between two reads (80,000 steps/s)
NORM_RING = 4096  # rows of the norm ring: written on the sampling cadence (rarely every step)
STEP_SPLIT = 1 << 24  # ... split here: each part is exact in float32 (steps < 2**48)
# Seconds between reads of the graph buffers: 5 plot updates a second. Each read costs
# a thread wake and a few eager reads (~0.5 ms of CPU on a busy 2-core VM): every 50 ms
# that was ~1% of a 1 ms step's time.
READ_EVERY = 0.2


class GraphRing:
    """One series' device buffers of step losses and sampled gradient norms, and its counter."""

    def __init__(self) -> None:
        self.losses: Any = None  # tf.Variable[RING] float32: each step's loss
        # tf.Variable[NORM_RING, 3] float32: half the squared global norm, the step (-1: none)
        self.norms: Any = None
        self.counter: Any = None  # tf.Variable int64: steps written
        self._tf: Any = None

    def write(self, tf: Any, target: Any, pairs: list[tuple[Any, Any]], norm: bool) -> None:
        """At trace time: the ops that write the step's loss ``target`` (and, if ``norm``, its
        gradients' global norm), then count it."""
        if target is not None and target.dtype == tf.float32 and target.shape.rank == 0:
            value = target  # the usual scalar float32 loss: no op needed
        elif target is not None:
            value = tf.reduce_mean(tf.cast(target, tf.float32))
        else:
            value = tf.constant(math.nan, tf.float32)
        half = None
        if norm:  # l2_loss(g) = sum(g**2) / 2; no gradient at all: NaN (unknown)
            grads = [g.values if isinstance(g, tf.IndexedSlices) else g for _, g in pairs]
            half = tf.add_n([tf.nn.l2_loss(tf.cast(g, tf.float32)) for g in grads] or [math.nan])
        self._make(tf)
        # Values first, then the count: a reader that sees the count sees the values.
        # (a raw read: read_value() adds an Identity op to every step)
        index = tf.raw_ops.ReadVariableOp(resource=self.counter.handle, dtype=tf.int64)
        scatter = tf.raw_ops.ResourceScatterUpdate
        written = [scatter(resource=self.losses.handle, indices=index % RING, updates=value)]
        if half is not None:
            # the step's number as two float32 columns, each part an exact integer
            step = tf.cast(tf.stack([index // STEP_SPLIT, index % STEP_SPLIT]), tf.float32)
            row = tf.concat([tf.reshape(half, [1]), step], 0)
            written.append(
                scatter(resource=self.norms.handle, indices=index % NORM_RING, updates=row)
            )
        with tf.control_dependencies(written):
            self.counter.assign_add(1, read_value=False)

    def read(self, known: int) -> tuple[int, list[float], list[float], int | None]:
        """Steps written so far, the losses and global norms of steps ``known..count-1`` (NaN:
        overwritten before this read, or no norm measured), and the first of them whose loss
        read is NaN or Inf (None: none)."""
        tf = self._tf
        if tf is None:  # its first trace is still writing the ops (the reader came between)
            return known, [], [], None
        from tfstudio.engine.probes.values import read_handle

        with tf.init_scope():  # eager reads, also while a trace asks (a new series)
            count = int(read_handle(self.counter.handle, tf.int64))
            if count <= known:
                return count, [], [], None
            losses = read_handle(self.losses.handle, tf.float32)
            rows = read_handle(self.norms.handle, tf.float32)
        lost = max(0, count - known - RING)  # overwritten before this read
        first = known + lost
        out_losses = [math.nan] * lost
        out_norms = [math.nan] * (count - known)
        bad = None
        if first < count:
            read = losses[np.arange(first, count) % RING]
            out_losses.extend(read.tolist())
            non_finite = np.flatnonzero(~np.isfinite(read))
            bad = first + int(non_finite[0]) if non_finite.size else None
            # the rows written by steps first..count-1 (each names its step)
            high, low = rows[:, -2].astype(np.int64), rows[:, -1].astype(np.int64)
            steps = high * STEP_SPLIT + low
            new = np.flatnonzero((steps >= first) & (steps < count))
            if new.size:
                norms = np.sqrt(2.0 * rows[new, 0].astype(np.float64))  # sqrt(2 l2_loss)
                for step, norm in zip(steps[new].tolist(), norms.tolist(), strict=True):
                    out_norms[step - known] = norm
        return count, out_losses, out_norms, bad

    def written(self) -> int:
        """Steps written so far (eagerly; the counter alone)."""
        if self._tf is None:
            return 0
        from tfstudio.engine.probes.values import read_handle

        return int(read_handle(self.counter.handle, self._tf.int64))

    def _make(self, tf: Any) -> None:
        if self.losses is None:  # (not counted as the step function's: no second trace)
            from tfstudio.engine.probes.values import own_variable

            self.losses = own_variable(np.zeros([RING], np.float32))
            rows = np.zeros((NORM_RING, 3), np.float32)
            rows[:, 1:] = -1.0  # no row measured yet: a step before the first
            self.norms = own_variable(rows)
            self.counter = own_variable(0, tf.int64)
        self._tf = tf  # last: the reader thread reads a ring once this is set
