"""A recorded run folder into a :class:`~tfstudio.core.run_store.RunStore`, the live way.

:class:`FolderFeed` reads a run folder (tfstudio's, or any TensorBoard log folder)
and turns what it holds into what a live run would have given the store: the
segments of ``run.json`` become ``FitStarted`` events, ``step/<key>`` tags per-step
values, ``epoch/<key>`` tags epoch means and ``val_`` points, ``learning_rate`` the
learning-rate line. Reading and applying are apart: :meth:`FolderFeed.read` does
the file work (any thread) and returns a :class:`FeedBatch`;
:meth:`FeedBatch.apply` puts it into the store (the thread that owns the store).
Each read takes a chunk of what was appended since the last, so a long run appears
chunk by chunk and a followed run grows; the reader keeps no points.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfstudio.core.eventfile import TagColumns
from tfstudio.core.events import CheckpointRestored, FitStarted, ModelSummary, RunEnded
from tfstudio.core.exact_points import overview_of
from tfstudio.core.feed_reader import FeedReader
from tfstudio.core.keras_folders import RAW, KerasSteps, is_mean, keras_tag
from tfstudio.core.locations import Location, location
from tfstudio.core.run_store import (
    EPOCH,
    LR_KEY,
    RESTORE_MARK,
    RUNNING,
    SAMPLED,
    STEP,
    Mark,
    RunStore,
)
from tfstudio.core.runs import (
    EPOCH_PREFIX,
    RUN_JSON,
    RUNNING_PREFIX,
    STEP_PREFIX,
    RunFolderReader,
    local_stamp,
    read_run_json,
    run_status,
)

INSPECTOR_PREFIXES = ("weights/", "gradients/", "outputs/")
SYSTEM_PREFIX = "system/"  # the System view's samples (core/run_record.py), not metrics


def tag_kind(tag: str) -> tuple[str, str] | None:
    """What a scalar tag is in a store: ``(key, kind)``, or None (not a metric).

    tfstudio's tags (``step/loss``, ``epoch/val_loss``, ``running/auc``,
    ``learning_rate``) and
    Keras ``TensorBoard`` callback tags (``train/epoch_loss``,
    ``validation/epoch_loss``, ``train/batch_loss``) map to the live run's keys
    (:class:`~tfstudio.core.keras_folders.KerasSteps` places their points);
    any other scalar (``tf.summary.scalar``) is a per-step line named by its tag.
    The inspector's statistics (``weights/...``) and the system samples
    (``system/...``) are not metrics.
    """
    if tag.startswith(STEP_PREFIX):
        return tag[len(STEP_PREFIX) :], STEP
    if tag.startswith(EPOCH_PREFIX):
        return tag[len(EPOCH_PREFIX) :], EPOCH
    if tag.startswith(RUNNING_PREFIX):
        return tag[len(RUNNING_PREFIX) :], RUNNING
    if tag == LR_KEY:
        return LR_KEY, SAMPLED
    if tag.startswith(INSPECTOR_PREFIXES) or tag.startswith(SYSTEM_PREFIX):
        return None
    folder, _, base = tag.rpartition("/")
    if folder in ("train", "validation"):
        val = "val_" if folder == "validation" else ""
        if base == "epoch_learning_rate":
            return LR_KEY, SAMPLED
        if base.startswith("epoch_"):
            return val + base[len("epoch_") :], EPOCH
        if base.startswith("batch_"):  # Keras's running means (keras_folders.KerasSteps)
            metric = base[len("batch_") :]
            return val + metric, STEP if is_mean(metric) or metric in RAW else RUNNING
        if folder == "validation":
            return None  # evaluation_*_vs_iterations: the same values again, by iteration
    return tag, STEP


def fits_from_run_json(info: dict[str, Any]) -> list[FitStarted]:
    """The segments ``run.json`` lists, as the ``FitStarted`` events that announced them."""
    fits = []
    for seg in info.get("segments") or []:
        if not isinstance(seg, dict):
            continue
        loop = int(seg.get("loop") or 0)
        params = int(seg.get("params") or 0)
        name, class_name = str(seg.get("model") or "?"), str(seg.get("class") or "")
        model = ModelSummary(name, class_name, (), params, params)
        fits.append(
            FitStarted(
                fit_index=int(seg.get("index", len(fits))),
                model=model,
                epochs=int(seg.get("epochs") or 0),
                initial_epoch=int(seg.get("initial_epoch") or 0),
                steps_per_epoch=seg.get("steps_per_epoch"),
                steps_per_execution=int(seg.get("steps_per_execution") or 1),
                global_step=int(seg.get("start_step") or 0),
                time=float(seg.get("start_time") or 0.0),
                kind="loop" if loop else "fit",
                loop_index=loop,
            )
        )
    return fits


RUN_JSON_EVERY_S = 2.0  # a running run's run.json (fits, restores, status) is read this often
STATUS_EVERY_S = 5.0  # a running run's writer is looked for this often (a /proc read)
OVERVIEW_PLACES = 256  # places of each event file an overview is read from
OVERVIEW_PLACES_REMOTE = 32
OVERVIEW_CHUNKS = 2  # a run of more chunks than this appears coarse first
OVERVIEW_FIRST_BYTES = 256 << 10  # read in order with the overview (the lines begin)
CHUNK_BYTES = 4 << 20  # read at a time: the reading thread lets go of the GIL between chunks


@dataclass
class FeedBatch:
    """What one read of a folder brought: new segments, new points per line, the end.

    ``more``: the folder holds more than was read (the loader reads on at once);
    ``progress``: (bytes read, bytes in the folder's event files).
    """

    fits: list[FitStarted] = field(default_factory=list)
    # (key, kind, steps, values, wall times), each in file order
    columns: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    restores: list[CheckpointRestored] = field(default_factory=list)  # with wall times
    ended: RunEnded | None = None
    # (key, steps, values): a few points of each per-step line over the whole run, read
    # before the run is read in order (see exact_points.Overview)
    overview: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    points: int = 0
    more: bool = False
    progress: tuple[int, int] = (0, 0)
    start_wall: float | None = None  # run.json's start_time: the zero of the time axes

    def apply(self, store: RunStore) -> None:
        """Put the batch into ``store`` (segments first, so lines are cut where they start).

        A restore recorded in the run splits the batch in file order (by wall time): what
        was recorded before it goes in, then the restore drops what came after its step,
        as it did live, then the rest.
        """
        store.add(self.fits)
        if self.start_wall and store.clock.start_wall is None:
            store.clock.set_start(self.start_wall)
        if self.overview:
            overview = overview_of(store, make=True)
            assert overview is not None
            for key, xs, ys in self.overview:
                overview.set(key, xs, ys)
        # Per-step lines before epoch points: a step's value comes before its epoch's mean.
        columns = sorted(self.columns, key=lambda c: c[1] != STEP)
        done = [0] * len(columns)
        timed = _timed(columns, has_steps=bool(store.steps))
        for restore in self.restores:
            for i, (key, kind, xs, ys, wall) in enumerate(columns):
                end = int(np.searchsorted(wall, restore.time, side="left"))
                if end > done[i]:
                    if timed[i]:
                        store.clock.add_wall(xs[done[i] : end], wall[done[i] : end])
                    store.add_columns(key, xs[done[i] : end], ys[done[i] : end], kind)
                    done[i] = end
            if math.isinf(restore.time):  # seen late: its lines were cut as steps went back
                store.marks.append(
                    Mark(restore.step, f"restored step {restore.step}", RESTORE_MARK)
                )
            else:
                store.add_event(restore)
        for i, (key, kind, xs, ys, wall) in enumerate(columns):
            if done[i] < len(xs):
                if timed[i]:
                    store.clock.add_wall(xs[done[i] :], wall[done[i] :])
                store.add_columns(key, xs[done[i] :], ys[done[i] :], kind)
        if self.ended is not None:
            store.add_event(self.ended)
        for note in self.notes:
            if note not in store.notes:
                store.notes.append(note)


def _timed(columns: list[tuple[str, str, Any, Any, Any]], has_steps: bool) -> list[bool]:
    """Which columns tell the run's clock when each step ended: the per-step metrics (not
    the system samples, the sampled learning rate, nor epoch values written after
    validation); the epoch values only in a folder with no per-step line."""
    steps = [kind == STEP and not key.startswith("system/") for key, kind, *_ in columns]
    if any(steps) or has_steps:
        return steps
    return [kind == EPOCH for _, kind, *_ in columns]


class FolderFeed:
    """Reads a run folder into a store, a chunk more at each :meth:`read`.

    The folder's reader streams: it keeps no points, so a run of any length goes
    through it into the store's bounded series.

    Args:
        run_dir: the run folder (path or URL).
        chunk_bytes: event-file bytes read per call at most.
    """

    def __init__(self, run_dir: str | Location, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.path = location(run_dir)
        self.reader = RunFolderReader(self.path)
        self.keras = KerasSteps()  # places a Keras TensorBoard folder's points
        self.chunk_bytes = chunk_bytes
        self._fits = 0
        self._restores = 0
        self._wall_read = -math.inf  # the latest wall time among the points handed over
        self._ended = False
        self._sampled = False  # the overview was read (a big run appears coarse first)
        self.cancelled = threading.Event()
        # run.json as last read, and its stamp: an unchanged file is not read again
        self._info: dict[str, Any] = {}
        self._info_stamp: tuple[int, int, int] | None = None
        self._info_at = -math.inf  # when run.json was last read
        self._status = ""
        self._fits_of: dict[str, Any] | None = None  # the run.json the segments are of
        self._all_fits: list[FitStarted] = []
        self._status_at = -math.inf

    def cancel(self) -> None:
        """Stop reading (from any thread): a read in progress stops between chunks."""
        self.cancelled.set()
        self.reader.cancel()

    def read(self) -> FeedBatch:
        """Read the next chunk of what was appended (file work only; the store is untouched)."""
        batch = FeedBatch()
        info = self._run_json()
        if info is not self._fits_of:  # run.json changed: its segments may have
            self._fits_of, self._all_fits = info, fits_from_run_json(info)
        start = info.get("start_time")
        if isinstance(start, (int, float)) and start > 0:
            batch.start_wall = float(start)
        fits = self._all_fits
        if len(fits) > self._fits:
            batch.fits = fits[self._fits :]
            self._fits = len(fits)
        budget = self.chunk_bytes
        if not self._sampled:
            self._sampled = True
            self.reader.discover()
            if self.reader.progress()[1] > OVERVIEW_CHUNKS * self.chunk_bytes:
                # a URL folder: each place is a request of its own, so fewer of them
                local = isinstance(self.path, Path)
                places = OVERVIEW_PLACES if local else OVERVIEW_PLACES_REMOTE
                for tag, cols in self.reader.sample(places).items():
                    mapped = tag_kind(tag)
                    # (a Keras folder's batch values are running means: no own values
                    # can be taken from a few points here and there)
                    if (
                        mapped is not None
                        and mapped[1] == STEP
                        and len(cols)
                        and not keras_tag(tag)
                    ):
                        batch.overview.append((mapped[0], cols.steps, cols.values))
                budget = min(budget, OVERVIEW_FIRST_BYTES)  # the overview comes at once
        restores = info.get("restores") or []
        for r in restores[self._restores :]:
            # by wall time; a restore seen after the points that followed it were handed
            # over only leaves its mark (those lines were cut when their steps went back)
            wall = float(r.get("wall") or 0.0)
            when = wall if wall >= self._wall_read else -math.inf
            batch.restores.append(
                CheckpointRestored(str(r.get("path", "")), int(r["step"]), 0, when)
            )
        self._restores = len(restores)
        read = self.reader.read(budget)
        for tag, cols in read.items():
            mapped = tag_kind(tag)
            if mapped is None or not len(cols):
                continue
            self._wall_read = max(self._wall_read, float(cols.wall[-1]))
            if keras_tag(tag) is None:
                batch.columns.append((mapped[0], mapped[1], cols.steps, cols.values, cols.wall))
                batch.points += len(cols)
        done, total = self.reader.progress()
        batch.progress = (done, total)
        batch.more = done < total and not self.cancelled.is_set()
        # a Keras TensorBoard folder's points, placed the live way
        for column in self.keras.columns(read, final=not batch.more):
            batch.columns.append(column)
            batch.points += len(column[2])
        status = self._run_status(info)
        if status and status != "running" and not batch.more and not self._ended:
            self._ended = True
            batch.ended = RunEnded(
                status=status,
                exit_code=int(info.get("exit_code") or 0),
                fits=len(fits),
                global_step=int(info.get("steps") or 0),
                time=float(info.get("duration") or 0.0),
                message=str(info.get("message") or ""),
            )
        batch.notes = self.reader.notes()
        return batch

    def _run_json(self) -> dict[str, Any]:
        """``run.json``, read again only when its stamp changed (a poll costs a stat), and
        while the run is running at most every :data:`RUN_JSON_EVERY_S` (its recorder
        rewrites it twice a second; the steps come from the event files)."""
        now = time.monotonic()
        if self._info.get("status") == "running" and now - self._info_at < RUN_JSON_EVERY_S:
            return self._info
        stamp = local_stamp(self.path / RUN_JSON)
        if stamp is None or stamp != self._info_stamp:
            self._info = read_run_json(self.path)
            self._info_stamp = stamp
            self._info_at = now
        return self._info

    def _run_status(self, info: dict[str, Any]) -> str:
        """The run's status; whether a running run's writer lives is asked every few seconds."""
        if not info:
            return ""
        now = time.monotonic()
        if info.get("status") != "running" or now - self._status_at >= STATUS_EVERY_S:
            self._status = run_status(info)
            self._status_at = now
        return self._status

    def read_steps(
        self, first: int, last: int, cancelled: Callable[[], bool] | None = None
    ) -> dict[str, TagColumns]:
        """Each per-step line's points with ``first <= step <= last``, by store key, read
        again from the folder (any thread): the exact points of a zoomed-in range."""
        out: dict[str, TagColumns] = {}
        # a Keras folder's batch steps restart at each fit (mapped to global steps here):
        # with more than one fit, the range is found among all of them
        lo, hi = (0, 1 << 62) if self.keras.fits > 1 else (max(first - 1, 0), last)
        for tag, cols in self.reader.read_steps(lo, hi, cancelled).items():
            mapped = tag_kind(tag)
            if mapped is None or mapped[1] != STEP or not len(cols):
                continue
            kt = keras_tag(tag)
            if kt is not None and kt[1].startswith("batch_"):
                steps = self.keras.global_steps(cols.steps, cols.wall)
                values = cols.values
                if is_mean(mapped[0]):  # running means: each batch's own value
                    values = self.keras.own_values(steps, values, cols.wall)
                cols = TagColumns(steps, values, cols.wall)
            keep = (cols.steps >= first) & (cols.steps <= last)
            out[mapped[0]] = TagColumns(cols.steps[keep], cols.values[keep], cols.wall[keep])
        return out


def load_folder(run_dir: str | Location, store: RunStore | None = None) -> RunStore:
    """A store holding a run folder as it is now (reads on the calling thread)."""
    feed = FolderFeed(run_dir)
    store = store if store is not None else RunStore(feed.path.name, path=str(feed.path))
    while True:
        batch = feed.read()
        batch.apply(store)
        if not batch.more:
            return store


class FolderLoader(FeedReader[FolderFeed, FeedBatch]):
    """Reads run folders on a thread of its own; the owner applies the batches.

    ``submit(feed)`` queues a read; finished reads wait in :meth:`take` (called by
    the store's owner, e.g. once per frame on the UI thread), so reading never
    blocks that thread and the store is only touched by its owner. A folder holding
    more than one read takes is read on at once, so a run appears chunk by chunk.
    """

    thread_name = "tfstudio-run-reader"

    def read_on(self, result: FeedBatch) -> bool:
        """Read on while the folder holds more than was read."""
        return result.more
