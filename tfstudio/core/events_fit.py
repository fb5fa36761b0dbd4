"""Events of a fit or custom loop: its start, its steps (as columns), epochs and end.

Part of the event vocabulary: import them from :mod:`tfstudio.core.events`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tfstudio.core.events_pickling import fast_pickling


@dataclass(frozen=True, slots=True)
class LayerSummary:
    """One layer of a model as shown in summaries.

    Args:
        depth: nesting level (0 for the model's own layers).
        output_shape: printable shape, ``"?"`` when Keras cannot tell.
    """

    name: str
    class_name: str
    output_shape: str
    params: int
    trainable_params: int
    depth: int = 0


@dataclass(frozen=True, slots=True)
class ModelSummary:
    """A model announced when its ``fit`` starts.

    Args:
        built: False for a model Keras builds at the fit's first step (a subclassed
            model, a ``Sequential`` without ``Input``): it has no weights yet, so its
            counts are 0 until :class:`ModelBuilt` tells them.
    """

    name: str
    class_name: str
    layers: tuple[LayerSummary, ...]
    total_params: int
    trainable_params: int
    built: bool = True


@dataclass(frozen=True, slots=True)
class ModelBuilt:
    """A fit's model, not built when the fit started, was built by its first step."""

    fit_index: int
    total_params: int
    trainable_params: int


@dataclass(frozen=True, slots=True)
class FitStarted:
    """A ``model.fit`` call began: one segment of the run.

    Args:
        fit_index: 0 for the run's first ``fit``, then 1, 2, ...
        global_step: the run's step count before this fit's first step.
        steps_per_epoch: ``None`` when the data has unknown length.
        steps_per_execution: Keras runs this many steps per batch hook.
        kind: ``"fit"``, or ``"loop"`` for a discovered custom training loop
            (``model.name`` then names the models/modules it trains; no epochs).
        loop_index: 1-based number of the loop among the run's loops (0 for a fit).
        verbose: the fit's ``verbose`` (Keras prints each epoch's metrics itself when
            it is not 0; headless then leaves them to Keras).
        number: 1-based number of the fit among the run's fits (0 for a loop, or when
            unknown: ``fit_index + 1`` is used); fits and loops are numbered apart.
        output: bytes the script had written to its ``sys.stdout`` and ``sys.stderr``
            when the fit started (a viewer puts the fit's line exactly there among the
            script's output); None when unknown.
    """

    fit_index: int
    model: ModelSummary
    epochs: int
    initial_epoch: int
    steps_per_epoch: int | None
    steps_per_execution: int
    global_step: int
    time: float
    kind: str = "fit"
    loop_index: int = 0
    verbose: int = 0
    number: int = 0
    output: tuple[int, int] | None = None

    def title(self) -> str:
        """``fit 2: name`` or ``loop 1: name``, for labels."""
        return f"{self.label()}: {self.model.name}"

    def label(self) -> str:
        """``fit 2`` or ``loop 1``: which fit or custom loop of the run this is."""
        if self.kind == "loop":
            return f"loop {self.loop_index}"
        return f"fit {self.number or self.fit_index + 1}"


@dataclass(frozen=True, slots=True)
class StepEnded:
    """One batch hook fired (covering ``steps`` training steps).

    Args:
        global_step: steps done in the whole run, this one included.
        epoch: 0-based epoch index as Keras counts it.
        step: steps done in this epoch (1-based, after this hook).
        steps: how many steps this hook covers (``steps_per_execution``).
        values: the batch's own loss and metrics (mean over the ``steps`` it
            covers); only keys whose own value can be known are present.
        running: what Keras reported: the running means over the epoch.
        time: seconds since the run started.
    """

    fit_index: int
    global_step: int
    epoch: int
    step: int
    steps: int
    values: Mapping[str, float]
    running: Mapping[str, float]
    time: float


@dataclass(frozen=True, slots=True, eq=False)
class StepColumns:
    """Consecutive steps of one fit or loop, as columns: how steps travel and are recorded.

    The training side appends each step to the channel as one row (a tuple:
    :class:`tfstudio.core.channel.StepRows`, a fit's raw rows ``core/fit_rows.py``)
    and the consumer's thread ships each run of rows as one of these, so a step costs
    one append on the training thread whatever the rate. Row ``i`` is what
    :class:`StepEnded` says of one step (:meth:`row` builds it).

    Args:
        fit_index: the fit or loop every row belongs to.
        global_step, epoch, step, steps: int64 columns, as in :class:`StepEnded`.
        time: float64 seconds since the run started.
        values: per key, float64: the step's own value (NaN where ``absent`` says none).
        running: per key, float64: the running mean Keras reported.
        absent: values keys that some rows lack -> bool mask of those rows.
        running_absent: the same for ``running``.
        coalesced: 0 for every step; N when the viewer's copy was thinned to the
            min and max of each N steps because it could not keep up (the record
            still has every step).
    """

    fit_index: int
    global_step: np.ndarray
    epoch: np.ndarray
    step: np.ndarray
    steps: np.ndarray
    time: np.ndarray
    values: Mapping[str, np.ndarray]
    running: Mapping[str, np.ndarray]
    absent: Mapping[str, np.ndarray] = field(default_factory=dict)
    running_absent: Mapping[str, np.ndarray] = field(default_factory=dict)
    coalesced: int = 0

    def __len__(self) -> int:
        return len(self.global_step)

    def __getitem__(self, i: int) -> StepEnded:
        return self.row(i)

    def __iter__(self):  # noqa: ANN204 - an iterator of StepEnded
        return (self.row(i) for i in range(len(self)))

    def row(self, i: int) -> StepEnded:
        """Row ``i`` (negative counts from the end) as a :class:`StepEnded`."""
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"row {i} of {n}")
        return StepEnded(
            self.fit_index,
            int(self.global_step[i]),
            int(self.epoch[i]),
            int(self.step[i]),
            int(self.steps[i]),
            _pick(self.values, self.absent, i),
            _pick(self.running, self.running_absent, i),
            float(self.time[i]),
        )

    def column(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(global steps, values) of the rows that have ``key``'s own value."""
        ys = self.values[key]
        mask = self.absent.get(key)
        if mask is None:
            return self.global_step, ys
        keep = ~mask
        return self.global_step[keep], ys[keep]


def join_steps(blocks: Sequence[StepColumns]) -> list[StepColumns]:
    """Consecutive blocks as few blocks as can be: one per run of blocks of the same fit.

    Keys some blocks lack are filled with NaN and masked ``absent`` in the joined block;
    a block of one is returned as it is.
    """
    out: list[StepColumns] = []
    start = 0
    for i in range(1, len(blocks) + 1):
        if i == len(blocks) or blocks[i].fit_index != blocks[start].fit_index:
            run = blocks[start:i]
            out.append(run[0] if len(run) == 1 else _joined(run))
            start = i
    return out


def _joined(blocks: Sequence[StepColumns]) -> StepColumns:
    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(b, name) for b in blocks])

    values, absent = _joined_dicts([(b.values, b.absent, len(b)) for b in blocks])
    running, running_absent = _joined_dicts([(b.running, b.running_absent, len(b)) for b in blocks])
    return StepColumns(
        blocks[0].fit_index,
        cat("global_step"),
        cat("epoch"),
        cat("step"),
        cat("steps"),
        cat("time"),
        values,
        running,
        absent,
        running_absent,
        max(b.coalesced for b in blocks),
    )


def _joined_dicts(
    parts: Sequence[tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray], int]],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    keys: dict[str, None] = {}
    for columns, _, _ in parts:
        keys.update(dict.fromkeys(columns))
    columns_out: dict[str, np.ndarray] = {}
    absent_out: dict[str, np.ndarray] = {}
    for key in keys:
        cols, masks = [], []
        for columns, absent, n in parts:
            col = columns.get(key)
            if col is None:
                cols.append(np.full(n, np.nan))
                masks.append(np.ones(n, dtype=bool))
            else:
                cols.append(col)
                mask = absent.get(key)
                masks.append(mask if mask is not None else np.zeros(n, dtype=bool))
        columns_out[key] = np.concatenate(cols)
        mask = np.concatenate(masks)
        if mask.any():
            absent_out[key] = mask
    return columns_out, absent_out


def step_rows(events: Iterable[object]) -> list[object]:
    """``events`` with every :class:`StepColumns` block replaced by its rows, as
    :class:`StepEnded` events (for tools and tests that look at steps one by one)."""
    out: list[object] = []
    for event in events:
        if type(event) is StepColumns:
            out.extend(event)
        else:
            out.append(event)
    return out


def step_batches(events: Iterable[object]) -> Iterator[object]:
    """``events`` in order, each run of consecutive :class:`StepEnded` as one list and a
    :class:`StepColumns` block whole: how a consumer takes steps (one block at a time)
    and every other event (one by one). A step block is a ``list`` or a ``StepColumns``."""
    run: list[StepEnded] = []
    for event in events:
        if type(event) is StepEnded:
            run.append(event)
            continue
        if run:
            yield run
            run = []
        yield event
    if run:
        yield run


def _pick(columns: Mapping[str, np.ndarray], absent: Mapping[str, np.ndarray], i: int) -> dict:
    if not absent:
        return {k: float(v[i]) for k, v in columns.items()}
    out = {}
    for k, v in columns.items():
        mask = absent.get(k)
        if mask is None or not mask[i]:
            out[k] = float(v[i])
    return out


@dataclass(frozen=True, slots=True)
class EpochEnded:
    """An epoch ended, with the epoch's metrics and any ``val_`` metrics."""

    fit_index: int
    epoch: int
    global_step: int
    metrics: Mapping[str, float]
    time: float


@dataclass(frozen=True, slots=True)
class FitEnded:
    """A ``model.fit`` call returned (or was stopped by the user).

    Args:
        output: as :attr:`FitStarted.output`, when the fit ended.
    """

    fit_index: int
    global_step: int
    stopped: bool
    time: float
    output: tuple[int, int] | None = None


fast_pickling(globals())


def _reduce_steps(self: StepColumns) -> tuple:
    """Pickle a block of steps as one buffer of its 8-byte columns (half the cost of one
    array each: a worker sends a block every pump beat, its viewer unpickles it).

    The buffer is the columns' bytes joined (``np.stack`` of them was 16 of the 24 us
    this took for a block of 24 steps, on the worker's pipe thread at every beat)."""
    arrays = [self.global_step, self.epoch, self.step, self.steps, self.time]
    arrays += [*self.values.values(), *self.running.values()]
    n = len(self.global_step)
    if not n or any(a.dtype.itemsize != 8 or a.shape != (n,) for a in arrays):
        return _field_values(self)  # as every other event pickles
    buf = b"".join([a.tobytes() for a in arrays])
    dtypes = "".join(a.dtype.char for a in arrays)
    return (
        _unpack_steps,
        (self.fit_index, n, tuple(self.values), tuple(self.running), dtypes, buf)
        + (self.absent, self.running_absent, self.coalesced),
    )


def _unpack_steps(
    fit_index: int,
    n: int,
    values: tuple[str, ...],
    running: tuple[str, ...],
    dtypes: str,
    buf: bytes,
    absent: Mapping[str, np.ndarray],
    running_absent: Mapping[str, np.ndarray],
    coalesced: int,
) -> StepColumns:
    table = np.frombuffer(buf, dtype=np.uint64).reshape(len(dtypes), n).copy()
    cols = [table[i].view(np.dtype(c)) for i, c in enumerate(dtypes)]
    k = len(values)
    return StepColumns(
        fit_index,
        *cols[:5],
        dict(zip(values, cols[5 : 5 + k], strict=True)),
        dict(zip(running, cols[5 + k :], strict=True)),
        absent,
        running_absent,
        coalesced,
    )


_field_values = StepColumns.__reduce__  # (cls, field values): from _fast_pickling

StepColumns.__reduce__ = _reduce_steps  # type: ignore[method-assign]
