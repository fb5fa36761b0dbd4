"""A fit's steps as Keras reports them, turned into each batch's own values off the training thread.

Keras 3 reports running means over the epoch in ``logs``; the batch's own value of
a mean metric is derived from two successive running means weighted by the samples
seen: ``own = (c_k*m_k - c_j*m_j) / (c_k - c_j)``. On the training thread a fit's
batch hook only appends one *raw row* to the run's channel: the running values as
Keras gave them (a tuple, in the logs' order), the samples seen after this batch and
after the one before (``c_k``, ``c_j``) and the previous row's running values. The
pump's thread derives a whole block of rows at once (:func:`raw_block`), bit for bit
what :func:`batch_mean` gives row by row (the same float64 operations in the same
order). Every batch end of a fit appends such a row: there is no other path.

A raw row is ``(layout, global_step, step, steps, time, c_k, c_j, running, previous)``:

- ``layout``: a :class:`RowLayout`: the fit, the epoch, the logs' keys in order and
  how each is derived (the same object for every row of an epoch);
- ``c_k``, ``c_j``: one float for every key, or, where means count in units of their
  own (a ``train_step``'s loss tracker counting batches beside an MAE counting
  samples), a tuple in ``layout.keys`` order, each key's own (a ``c_j`` of 0, or a
  tuple's 0, means no previous: the batch's own value is its running value);
- ``running``: the logs' values in ``layout.keys`` order (floats, as Keras's
  ``pythonify_logs`` made them; anything else is read as absent);
- ``previous``: the previous row's ``running`` (the same tuple) for the same keys,
  or None at an epoch's first batch and after the loss tracker was reset (``c_j`` is
  0 there); a block reads only its first row's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain

import numpy as np

from tfstudio.core.events import StepColumns

MEAN, RAW, RUNNING = 0, 1, 2
"""How a log key is derived: a running mean (its batch's own value is derived), a raw
value (the batch's own already: a ``train_step``'s untracked numbers), or a running
value with no batch value (AUC, precision: only the running value is sent)."""


class RowLayout:
    """What the raw rows of one epoch of one fit hold: its keys in order and their kinds.

    Args:
        fit_index: the fit the rows belong to.
        epoch: their epoch.
        keys: the logs' keys, in the order the rows' values come in.
        kinds: per key, :data:`MEAN`, :data:`RAW` or :data:`RUNNING`.
    """

    __slots__ = ("fit_index", "epoch", "keys", "kinds", "loss_at")

    def __init__(
        self, fit_index: int, epoch: int, keys: Sequence[str], kinds: Sequence[int]
    ) -> None:
        self.fit_index = fit_index
        self.epoch = epoch
        self.keys = tuple(keys)
        self.kinds = tuple(kinds)
        self.loss_at = self.keys.index("loss") if "loss" in self.keys else None

    def for_epoch(self, epoch: int) -> RowLayout:
        """The same keys and kinds, for another epoch."""
        return RowLayout(self.fit_index, epoch, self.keys, self.kinds)

    def same(self, epoch: int, keys: Sequence[str], kinds: Sequence[int]) -> bool:
        """Whether this layout is the one for ``epoch``, ``keys`` and ``kinds``."""
        return epoch == self.epoch and tuple(keys) == self.keys and tuple(kinds) == self.kinds


def batch_mean(m: float, m_j: float | None, c_k: float, c_j: float) -> float:
    """A batch's own mean from the running means after it (``m``, over ``c_k`` samples)
    and before it (``m_j``, over ``c_j``); ``m`` itself at an epoch's first batch."""
    return m if m_j is None or c_j == 0.0 else (c_k * m - c_j * m_j) / (c_k - c_j)


def raw_block(rows: Sequence[tuple]) -> StepColumns:
    """Consecutive raw rows of one layout as a block of columns, each batch's own values derived.

    Values that are not numbers (a ``train_step`` returning a vector Keras could not
    make a float) are absent in their rows, the rest of the row is kept.
    """
    try:
        return _block_of_numbers(rows)
    except (TypeError, ValueError):
        pass
    # NaN in place of each value that is not a number, then the same derivation
    cleaned, bad = [], []
    for row in rows:
        running, bad_running = _floats(row[7])
        previous = None if row[8] is None else _floats(row[8])[0]
        cleaned.append((*row[:7], running, previous))
        bad.append(bad_running)
    block = _block_of_numbers(cleaned)
    masks = np.array(bad, dtype=bool).T  # a key a row
    for j, (key, kind) in enumerate(zip(rows[0][0].keys, rows[0][0].kinds, strict=True)):
        if masks[j].any():
            block.running_absent[key] = masks[j]  # type: ignore[index]
            if kind != RUNNING:
                block.absent[key] = masks[j]  # type: ignore[index]
    return block


def _block_of_numbers(rows: Sequence[tuple]) -> StepColumns:
    """:func:`raw_block` when every value is a number (raises otherwise).

    The means are derived in Python, row by row, as the rows are read: on the pump's
    thread that is ~30 us a block cheaper than numpy's seven calls on a few dozen rows
    (docs/benchmarks.md's history), and the same float64 operations in the same order as
    :func:`batch_mean`.
    """
    layout: RowLayout = rows[0][0]
    _, global_step, step, steps, time, c_k, c_j, running, _ = zip(*rows, strict=True)
    n = len(rows)
    width = len(layout.keys)
    means = [j for j, kind in enumerate(layout.kinds) if kind == MEAN]
    own: list[float] = []
    # Each row's previous values are the row before's (the same tuple): only the first
    # row's come from outside the block (read only where its c_j is not 0).
    before = rows[0][8]
    for ck, cj, now in zip(c_k, c_j, running, strict=True):
        if cj == 0.0:
            own.extend([now[j] for j in means])
        elif type(ck) is tuple:  # each key its own count
            own.extend([_own(ck[j], cj[j], now[j], before[j]) for j in means])
        elif ck == cj:  # no samples between two batch ends (never seen): no own value
            own.extend([math.nan] * len(means))
        else:
            den = ck - cj
            own.extend([(ck * now[j] - cj * before[j]) / den for j in means])
        before = now
    flat = np.fromiter(
        chain(global_step, step, steps, time, chain.from_iterable(running), own),
        np.float64,
        (4 + width + len(means)) * n,
    )
    current = flat[4 * n : (4 + width) * n].reshape(n, width).T  # a key a row
    derived = flat[(4 + width) * n :].reshape(n, len(means)).T
    of_mean = {j: derived[i] for i, j in enumerate(means)}
    values: dict[str, np.ndarray] = {}
    runs: dict[str, np.ndarray] = {}
    for j, (key, kind) in enumerate(zip(layout.keys, layout.kinds, strict=True)):
        runs[key] = current[j]
        if kind != RUNNING:
            values[key] = of_mean[j] if kind == MEAN else current[j]
    ints = flat[: 3 * n].reshape(3, n).astype(np.int64)
    epoch = np.full(n, layout.epoch, dtype=np.int64)
    return StepColumns(
        layout.fit_index,
        ints[0],
        epoch,
        ints[1],
        ints[2],
        flat[3 * n : 4 * n],
        values,
        runs,
        {},
        {},
    )


def _own(ck: float, cj: float, m: float, m_j: float) -> float:
    """One key's own value where each key has its own counts (:func:`batch_mean`'s
    operations; NaN where no samples came between)."""
    if cj == 0.0:
        return m
    if ck == cj:
        return math.nan
    return (ck * m - cj * m_j) / (ck - cj)


def _floats(values: Sequence[object]) -> tuple[tuple[float, ...], list[bool]]:
    """``values`` as floats, NaN for each that is not a number; and which those are."""
    out: list[float] = []
    bad: list[bool] = []
    for value in values:
        try:
            out.append(float(value))  # type: ignore[arg-type]
            bad.append(False)
        except (TypeError, ValueError):
            out.append(math.nan)
            bad.append(True)
    return tuple(out), bad
