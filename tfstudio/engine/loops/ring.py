"""The graph ring buffer: a ``tf.function`` step's loss and gradient norm, kept on the device.

Inside a ``tf.function`` a step's values exist only when the graph runs. At
trace time the step gets a write of the row ``(loss, l2_loss of each gradient)``
into a device-side ring buffer (one ``tf.Variable[RING, 1 + parts]`` per series,
made with ``tf.init_scope`` so a retrace reuses it) and a counter. A background
thread (:class:`RingReader`) reads the buffers every :data:`READ_EVERY` seconds.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

RING = 16384  # steps a graph series' buffer holds between two reads (80,000 steps/s)
# Seconds between reads of the graph buffers: 5 plot updates a second. Each read costs
# a thread wake and two eager reads (~0.5 ms of CPU on a busy 2-core VM): every 50 ms
# that was ~1% of a 1 ms step's time.
READ_EVERY = 0.2
MAX_PARTS = 16  # columns of gradient norms per row (more gradients are added in groups)


class GraphRing:
    """One series' device buffer of step rows and its step counter."""

    def __init__(self) -> None:
        # tf.Variable[RING, 1 + parts] per step: the loss, then l2_loss of each gradient
        # (or of groups of them, at most MAX_PARTS); the reader sums them
        self.buffer: Any = None
        self.counter: Any = None  # tf.Variable int64: steps written
        self._tf: Any = None

    def row(self, tf: Any, target: Any, pairs: list[tuple[Any, Any]]) -> list[Any]:
        """At trace time: the step's row (loss, gradient parts); makes the buffer at the first."""
        if target is not None and target.dtype == tf.float32 and target.shape.rank == 0:
            value = target  # the usual scalar float32 loss: no op needed
        elif target is not None:
            value = tf.reduce_mean(tf.cast(target, tf.float32))
        else:
            value = tf.constant(math.nan, tf.float32)
        grads = [g.values if isinstance(g, tf.IndexedSlices) else g for _, g in pairs]
        # l2_loss(g) = sum(g**2) / 2 per gradient, one op each, each in its own column:
        # the reader sums them (bench/loop_write_cost.py: an add_n here cost 0.4-2% of
        # a 1 ms step more than the columns, within that bench's resolution)
        parts = [tf.nn.l2_loss(tf.cast(g, tf.float32)) for g in grads]
        self._make(tf, min(len(parts), MAX_PARTS) or 1)
        return [value, *_columns(tf, parts, int(self.buffer.shape[1]) - 1)]

    def write(self, tf: Any, row: list[Any]) -> None:
        """At trace time: add the ops that write ``row`` at the counter, then count it."""
        # Values first, then the count: a reader that sees the count sees the values.
        # (a raw read: read_value() adds an Identity op to every step)
        index = tf.raw_ops.ReadVariableOp(resource=self.counter.handle, dtype=tf.int64)
        # One row at a scalar index (no reshapes): buffer[index % RING] = (loss, parts).
        written = tf.raw_ops.ResourceScatterUpdate(
            resource=self.buffer.handle, indices=index % RING, updates=tf.stack(row)
        )
        with tf.control_dependencies([written]):
            self.counter.assign_add(1, read_value=False)

    def read(self, known: int) -> tuple[int, list[float], list[float]]:
        """Steps written so far, and the losses and global norms of steps ``known..count-1``.

        Steps overwritten before this read are NaN. Called by the reader thread
        (eagerly) or while a trace asks how far its loop is (in ``init_scope``).
        """
        tf = self._tf
        if tf.executing_eagerly():  # the reader thread: raw reads (~20 us, .numpy() ~110 us)
            count = int(_read(self.counter.handle, tf.int64))
            if count <= known:
                return count, [], []
            data = _read(self.buffer.handle, tf.float32)
        else:  # while tracing (a new series asks how far the loop is)
            with tf.init_scope():
                count = int(self.counter.numpy())
                if count <= known:
                    return count, [], []
                data = self.buffer.numpy()
        lost = max(0, count - known - RING)  # overwritten before this read
        losses = [math.nan] * lost
        norms = [math.nan] * lost
        first = known + lost
        if first < count:
            lo, hi = first % RING, count % RING or RING
            rows = data[lo:hi] if lo < hi else np.concatenate((data[lo:], data[:hi]))
            losses.extend(rows[:, 0].tolist())
            # columns 1.. hold l2_loss(g) = sum(g**2) / 2: the global norm is sqrt(2 sum)
            squares = rows[:, 1:].astype(np.float64).sum(axis=1)
            norms.extend(np.sqrt(2.0 * squares).tolist())
        return count, losses, norms

    def _make(self, tf: Any, parts: int) -> None:
        """Create the buffer and counter (outside any traced function), once.

        Args:
            parts: the columns after the loss (kept by a retrace that has other gradients).
        """
        self._tf = tf
        if self.buffer is None:
            with tf.init_scope():
                self.buffer = tf.Variable(tf.zeros([RING, 1 + parts], tf.float32), trainable=False)
                self.counter = tf.Variable(0, dtype=tf.int64, trainable=False)


class RingReader:
    """A thread that reports the graph steps that ran, every :data:`READ_EVERY` seconds.

    Args:
        sync: reads the buffers and emits the steps (under the interceptor's lock).
        on_error: told of a failed read (the thread goes on).
    """

    def __init__(self, sync: Callable[[], None], on_error: Callable[[BaseException], None]) -> None:
        self._sync = sync
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def thread(self) -> threading.Thread | None:
        """The reading thread, once started (benchmarks charge its CPU time)."""
        return self._thread

    def start(self) -> None:
        """Start reading (once; later calls do nothing)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="tfstudio-loop-reader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for it (briefly)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _loop(self) -> None:
        while not self._stop.wait(READ_EVERY):
            try:
                self._sync()
            except Exception as exc:  # noqa: BLE001
                self._on_error(exc)


def _columns(tf: Any, parts: list[Any], n: int) -> list[Any]:
    """``parts`` (scalars whose sum is the squared norm / 2) as exactly ``n`` columns.

    No gradient at all: NaN (the step's norm is unknown). More parts than columns:
    groups of neighbours are added; fewer: zeros fill the rest.
    """
    if not parts:
        return [tf.constant(math.nan, tf.float32)] * n
    if len(parts) > n:
        size = -(-len(parts) // n)  # ceil: at most n groups
        groups = [parts[i : i + size] for i in range(0, len(parts), size)]
        parts = [g[0] if len(g) == 1 else tf.add_n(g) for g in groups]
    return parts + [tf.constant(0.0, tf.float32)] * (n - len(parts))


def _read(handle: Any, dtype: Any) -> np.ndarray:
    """A resource variable's value as numpy, with the least Python (the reader's hot path)."""
    from tensorflow.python.ops import gen_resource_variable_ops

    return gen_resource_variable_ops.read_variable_op(handle, dtype).numpy()
