"""The only crossing between the training thread and its consumers.

Events go out, commands come in. The training side never waits on its
consumers and never drops an event: the consumer (the run's pump) drains
whatever is queued at its own pace.

Steps travel as columns. The training side appends one row per step to
:attr:`Channel.rows` (one tuple: a few hundred nanoseconds whatever the rate):
a fit's batch hook a *raw row* (``core/fit_rows.py``: Keras's running means, each
batch's own values derived later), anything else :meth:`Channel.step`'s derived
row. Any other event seals the rows so far first, so order is kept, and
:meth:`drain` turns each run of rows into :class:`~tfstudio.core.events.StepColumns`
on the consumer's thread. The row list is never replaced: appending to it takes no
lock (``list.append`` is atomic in CPython) and sealing takes the rows from its
front. Commands are a lock-free deque (``append``/``popleft`` are atomic too);
sealing and events share one uncontended lock.
"""

from __future__ import annotations

import operator
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from tfstudio.core.commands import Command
from tfstudio.core.events import Event, StepColumns, StepEnded
from tfstudio.core.fit_rows import raw_block

BLOCK_ROWS = 4096  # a block is sealed at this many rows even if no one drains it
# With this many blocks queued (the pump starved of CPU or of the GIL by a fast loop),
# the training side seals further blocks as columns itself: ~60 bytes a step, not ~450.
BACKLOG_BLOCKS = 16


class StepRows:
    """Rows of consecutive steps, as appended on the training thread (sealed, not yet columns).

    A row is ``(fit_index, global_step, epoch, step, steps, time, values, running)``
    (:meth:`Channel.step`) or a fit's raw row, whose first item is its
    :class:`~tfstudio.core.fit_rows.RowLayout`; :meth:`columns` makes them columns,
    one :class:`StepColumns` per run of rows of one fit (and, for raw rows, one epoch).
    """

    __slots__ = ("rows",)

    def __init__(self, rows: list[tuple]) -> None:
        self.rows = rows

    @classmethod
    def of(cls, steps: Iterable[StepEnded]) -> StepRows:
        """Step events as rows (events made one by one: tests, older producers)."""
        return cls(
            [
                (s.fit_index, s.global_step, s.epoch, s.step, s.steps, s.time, s.values, s.running)
                for s in steps
            ]
        )

    def columns(self) -> list[StepColumns]:
        """The rows as columns: one block per run of rows of the same fit."""
        rows = self.rows
        out: list[StepColumns] = []
        start = 0
        for i in range(1, len(rows) + 1):
            # a fit's index (an int) or a raw row's layout (compared as the same object)
            if i == len(rows) or rows[i][0] != rows[start][0]:
                part = rows[start:i]
                out.append(_block(part) if type(part[0][0]) is int else raw_block(part))
                start = i
        return out


def _block(rows: Sequence[tuple]) -> StepColumns:
    _, global_step, epoch, step, steps, time, values_, running_ = zip(*rows, strict=True)
    values, absent = _dict_columns(values_)
    running, running_absent = _dict_columns(running_)
    i64 = np.int64
    return StepColumns(
        rows[0][0],
        np.array(global_step, dtype=i64),
        np.array(epoch, dtype=i64),
        np.array(step, dtype=i64),
        np.array(steps, dtype=i64),
        np.array(time, dtype=np.float64),
        values,
        running,
        absent,
        running_absent,
    )


def _dict_columns(
    dicts: Sequence[Mapping[str, float]],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One dict per row -> (key -> float64 column, key -> mask of the rows without it)."""
    first = dicts[0]
    n = len(dicts)
    k = len(first)
    # The usual case: every row has the first row's keys (same count and all present).
    if k and set(map(len, dicts)) == {k}:
        try:
            f64, get = np.float64, operator.itemgetter
            return {key: np.fromiter(map(get(key), dicts), f64, n) for key in first}, {}
        except KeyError:
            pass
    elif not k and not any(dicts):
        return {}, {}
    keys: dict[str, None] = {}
    for d in dicts:
        if len(d) != len(keys) or any(key not in keys for key in d):
            keys.update(dict.fromkeys(d))
    columns: dict[str, np.ndarray] = {}
    absent: dict[str, np.ndarray] = {}
    nan = float("nan")
    for key in keys:
        columns[key] = np.fromiter((d.get(key, nan) for d in dicts), np.float64, n)
        mask = np.fromiter((key not in d for d in dicts), bool, n)
        if mask.any():
            absent[key] = mask
    return columns, absent


class Channel:
    """Events from a run to its viewer, commands from the viewer to the run.

    Args:
        commands_of: take the commands sent to that channel (an in-process run emits
            on a channel of its own, which its pump drains into the viewer's channel,
            while the viewer sends commands on the viewer's channel).
    """

    __slots__ = ("_events", "_commands", "_rows", "_lock")

    def __init__(self, commands_of: Channel | None = None) -> None:
        self._events: deque[object] = deque()
        self._rows: list[tuple] = []  # never replaced: the training side appends lock-free
        self._lock = threading.Lock()
        self._commands: deque[Command] = (
            commands_of._commands if commands_of is not None else deque()
        )

    # -- training side -------------------------------------------------
    @property
    def rows(self) -> list[tuple]:
        """The list the training side appends step rows to (the same list for the
        channel's life: a fit's hook keeps it). After an append that leaves
        :data:`BLOCK_ROWS` or more, call :meth:`seal_full`."""
        return self._rows

    def step(
        self,
        fit_index: int,
        global_step: int,
        epoch: int,
        step: int,
        steps: int,
        values: Mapping[str, float],
        running: Mapping[str, float],
        time: float,
    ) -> None:
        """Append one step (as :class:`StepEnded` describes it) to the rows being filled.

        The dicts are kept, not copied: the caller must not change them afterwards.
        """
        rows = self._rows
        rows.append((fit_index, global_step, epoch, step, steps, time, values, running))
        if len(rows) >= BLOCK_ROWS:
            self.seal_full()

    def seal_full(self) -> None:
        """Seal the rows appended so far as a block even though no one drains them (at
        :data:`BLOCK_ROWS`), as columns when :data:`BACKLOG_BLOCKS` wait already."""
        with self._lock:
            rows = self._take_rows()
            if not rows:
                return
            if len(self._events) < BACKLOG_BLOCKS:
                self._events.append(StepRows(rows))
            else:  # the consumer lags: keep the rows as columns, a tenth of the memory
                self._events.extend(StepRows(rows).columns())

    def _take_rows(self) -> list[tuple]:
        """The rows appended so far, taken from the front of the list (with the lock held):
        a row another thread appends meanwhile stays for the next seal."""
        rows = self._rows
        n = len(rows)
        taken = rows[:n]
        del rows[:n]
        return taken

    def _seal_locked(self) -> None:
        if self._rows:
            self._events.append(StepRows(self._take_rows()))

    def emit(self, event: Event) -> None:
        """Queue one event after the steps appended so far; never blocks for long."""
        with self._lock:
            self._seal_locked()
            self._events.append(event)

    def emit_all(self, events: Iterable[object]) -> None:
        """Queue several events, in order, after the steps appended so far."""
        with self._lock:
            self._seal_locked()
            self._events.extend(events)

    def has_commands(self) -> bool:
        """Cheap check for the per-step path: is any command waiting?"""
        return bool(self._commands)

    @property
    def command_queue(self) -> deque[Command]:
        """The waiting commands themselves (a hot path tests ``not queue``: no call)."""
        return self._commands

    def take_commands(self) -> list[Command]:
        """Remove and return the waiting commands, oldest first."""
        return _take_all(self._commands)

    # -- consumer side -------------------------------------------------
    def send(self, command: Command) -> None:
        """Queue a command for the training thread."""
        self._commands.append(command)

    def drain(self) -> list[Event]:
        """Remove and return every queued event, oldest first (steps as :class:`StepColumns`)."""
        with self._lock:
            self._seal_locked()
            taken = list(self._events)
            self._events.clear()
        if not any(type(e) is StepRows for e in taken):
            return taken
        out: list[Event] = []
        for event in taken:
            if type(event) is StepRows:
                out.extend(event.columns())
            else:
                out.append(event)
        return out

    def pending(self) -> int:
        """Number of events (a block of steps counts once) queued and not yet drained."""
        return len(self._events) + (1 if self._rows else 0)


def _take_all(queue: deque) -> list:
    """Pop everything queued, oldest first; safe while another thread appends."""
    taken: list = []
    pop = queue.popleft
    while True:
        try:
            taken.append(pop())
        except IndexError:
            return taken


def coalesce(block: StepColumns, bucket: int) -> StepColumns:
    """``block`` thinned for a viewer that cannot keep up: each ``bucket`` steps become two
    rows, the first step with each key's minimum and the last with its maximum (NaN
    ignored), so the plotted envelope stays; ``coalesced`` says how many steps a pair holds.
    """
    n = len(block)
    if bucket < 2 or n <= 2:
        return block
    starts = np.arange(0, n, bucket)
    ends = np.minimum(starts + bucket, n) - 1
    pick = np.empty(2 * len(starts), dtype=np.int64)
    pick[0::2], pick[1::2] = starts, ends
    keep = np.ones(len(pick), dtype=bool)
    keep[1::2] = ends != starts  # a bucket of one step is one row
    pick = pick[keep]

    def envelope(columns: Mapping[str, np.ndarray], absent: Mapping[str, np.ndarray]) -> dict:
        out = {}
        for key, col in columns.items():
            mask = absent.get(key)
            values = col if mask is None else np.where(mask, np.nan, col)
            with np.errstate(invalid="ignore"):
                lo = np.fmin.reduceat(values, starts)
                hi = np.fmax.reduceat(values, starts)
            both = np.empty(2 * len(starts))
            both[0::2], both[1::2] = lo, hi
            out[key] = both[keep]
        return out

    def masks(columns: Mapping[str, np.ndarray]) -> dict:
        return {k: np.isnan(v) for k, v in columns.items() if np.isnan(v).any()}

    values = envelope(block.values, block.absent)
    running = envelope(block.running, block.running_absent)
    return StepColumns(
        block.fit_index,
        block.global_step[pick],
        block.epoch[pick],
        block.step[pick],
        block.steps[pick],
        block.time[pick],
        values,
        running,
        {k: m for k, m in masks(values).items() if k in block.absent},
        {k: m for k, m in masks(running).items() if k in block.running_absent},
        coalesced=bucket * block.coalesced // 2 if block.coalesced else bucket,
    )
