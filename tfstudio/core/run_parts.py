"""A run folder's parts read off the thread that owns its model (issue 56).

A reopened run can be big: thousands of inspector samples, hours of system samples,
megabytes of console text. Reading it on the window's thread would pause the window,
so reading and applying are apart, as for the metrics
(:class:`~tfstudio.core.run_loading.FolderFeed`):

- :class:`PartsFeed` reads a folder (any thread) and returns a :class:`FolderParts`:
  the metrics' chunks when the feed reads them, a filled
  :class:`~tfstudio.core.inspector_store.InspectorStore`, the
  :class:`~tfstudio.core.run_record.RunRecord` (console, system samples, checkpoints,
  notices) and the hyperparameters. It keeps its reader, so reading again (a run
  followed while it grows) reads only what was appended; the inspector's samples are
  rebuilt only when new ones came.
- :class:`PartsReader` runs feeds on a thread of its own; :meth:`PartsReader.take`
  hands the finished reads to the owner (the window's GUI thread), which applies them
  with :meth:`~tfstudio.core.run_model.RunModel.take_parts`.

The reader thread builds plain Python and numpy objects only (never a Qt object), so
the window's rule holds: garbage is collected on the GUI thread (``ui/guards.py``).
Nothing here imports Qt.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfstudio.core.eventfile_decode import TagColumns
from tfstudio.core.feed_reader import FeedReader
from tfstudio.core.hparams import HParamValue
from tfstudio.core.inspector_store import InspectorStore
from tfstudio.core.locations import Location, location
from tfstudio.core.run_loading import INSPECTOR_PREFIXES, FeedBatch, FolderFeed, fits_from_run_json
from tfstudio.core.run_reading import RunReader
from tfstudio.core.run_record import SYSTEM_PREFIX, RunRecord, read_run_record

# A followed run's inspector samples are rebuilt whole from what was read (new samples
# came): at most this share of the reader thread's time, and not more often than
# FOLLOW_INSPECTOR_S.
INSPECTOR_SHARE = 0.05
FOLLOW_INSPECTOR_S = 2.0


@dataclass
class FolderParts:
    """What one read of a run folder brought (to apply on the model's own thread).

    Attributes:
        path: the folder.
        batches: the metrics' chunks, in order (empty when the feed does not read them).
        inspector: the inspector's samples, whole; None when no new sample came since the
            feed's last read.
        status: ``run.json``'s status (``"running"`` while the run is written).
        record: console, system samples, checkpoints and notices; None if unreadable.
        hparams: the hyperparameters; None if unreadable.
        notes: what could not be read, in words (say what and where).
    """

    path: str
    batches: list[FeedBatch] = field(default_factory=list)
    inspector: InspectorStore | None = None
    status: str = "unknown"
    record: RunRecord | None = None
    hparams: dict[str, HParamValue] | None = None
    notes: list[str] = field(default_factory=list)


class PartsFeed:
    """Reads one run folder's parts; call :meth:`read` again to follow it as it grows.

    Meant for one reading thread at a time (a :class:`PartsReader`'s).

    Args:
        run_dir: the folder (a path or a URL TensorBoard's file layer reads).
        metrics: read the metrics too (a model with no other source of them).
    """

    def __init__(self, run_dir: str | Location, metrics: bool = False) -> None:
        self.path = location(run_dir)
        self.metrics = FolderFeed(self.path) if metrics else None
        self.reader = RunReader(self.path)
        self.cancelled = threading.Event()
        self.reads = 0  # reads finished (the first one fills the model)
        self._info: dict[str, Any] = {}  # run.json as last read whole
        self._inspector_seen: tuple[int, int] | None = None  # (scalars, histograms) built from
        self._inspector_next = 0.0  # (monotonic) a followed run's samples rebuilt from then

    def cancel(self) -> None:
        """Stop reading (from any thread): a read in progress ends early."""
        self.cancelled.set()
        self.reader.folder.cancel()
        if self.metrics is not None:
            self.metrics.cancel()

    def read(self) -> FolderParts:
        """Read what the folder holds now (only what was appended since the last read)."""
        from tfstudio.core.hparams import clean, read_hparams
        from tfstudio.core.recorded import inspector_events, model_tree
        from tfstudio.core.runs import read_run_json, run_status

        parts = FolderParts(str(self.path))
        while self.metrics is not None and not self.cancelled.is_set():
            batch = self.metrics.read()
            parts.batches.append(batch)
            if not batch.more:
                break
        self.reader.update()
        # a run.json caught half rewritten (by a writer that does not replace it whole)
        # reads as nothing: what the last read found stands, so following goes on
        info = read_run_json(self.path) or self._info
        self._info = info
        parts.status = run_status(info)
        seen = self._inspector_points()
        over = parts.status != "running"
        if seen != self._inspector_seen and (over or time.monotonic() >= self._inspector_next):
            self._inspector_seen = seen
            began = time.monotonic()
            try:
                parts.inspector = _inspector(
                    inspector_events(self.reader.scalars, self.reader.histograms, info),
                    model_tree(info),
                    fits_from_run_json(info),
                    self.path.name,
                )
            except Exception as exc:  # noqa: BLE001 - a damaged folder is said, not fatal
                parts.notes.append(f"{self.path}: its inspector samples: {exc}")
            took = time.monotonic() - began
            self._inspector_next = began + max(FOLLOW_INSPECTOR_S, took / INSPECTOR_SHARE)
        try:
            parts.record = read_run_record(self.path, self._system_columns())
        except Exception as exc:  # noqa: BLE001
            parts.notes.append(f"{self.path}: its console, system samples and lists: {exc}")
        recorded = info.get("hparams")
        try:
            if isinstance(recorded, dict) and recorded:
                parts.hparams = dict(clean(recorded))
            elif not self.reads:  # (a foreign folder's HParams data: read once, it stays)
                parts.hparams = dict(read_hparams(str(self.path)))
        except Exception as exc:  # noqa: BLE001
            parts.notes.append(f"{self.path}: its hyperparameters: {exc}")
        self.reads += 1
        if over:  # no more will come: the points are the model's now, not kept twice here
            self.reader = RunReader(self.path)
        return parts

    def _inspector_points(self) -> tuple[int, int]:
        """How many inspector points and histograms were read (a new one: rebuild)."""
        scalars = sum(
            len(p.steps) for t, p in self.reader.scalars.items() if t.startswith(INSPECTOR_PREFIXES)
        )
        return scalars, sum(len(h) for h in self.reader.histograms.values())

    def _system_columns(self) -> dict[str, TagColumns]:
        """The ``system/...`` scalars the reader holds, as columns (read once, not again)."""
        return {
            tag: TagColumns(
                np.asarray(p.steps, np.int64),
                np.asarray(p.values, np.float64),
                np.asarray(p.wall, np.float64),
            )
            for tag, p in self.reader.scalars.items()
            if tag.startswith(SYSTEM_PREFIX)
        }


def _inspector(events: list[Any], tree: Any, fits: list[Any], name: str) -> InspectorStore:
    """An inspector store holding a recorded run's samples (built on the reading thread)."""
    store = InspectorStore()
    store.recorded_in = name
    for fit in fits:
        store.ingest(fit)
    if tree is not None:
        store.ingest(tree)
    for event in events:
        store.ingest(event)
    return store


def adopt(target: InspectorStore, source: InspectorStore) -> None:
    """Make ``target`` hold ``source``'s samples (views keep ``target``; its version moves).

    Keeps what the owner set on ``target`` (the fits' labels, the end) where ``source``
    lacks it.
    """
    version = target.version
    kinds = {**target.kinds, **source.kinds}
    ended = target.ended or source.ended
    trees = source.trees or target.trees
    target.__dict__.update(source.__dict__)
    target.kinds, target.ended, target.trees = kinds, ended, trees
    target.version = version + source.version + 1


class PartsReader(FeedReader[PartsFeed, FolderParts]):
    """Reads :class:`PartsFeed` s on a thread of its own; the owner takes the results.

    ``submit(feed)`` queues a read; finished reads wait in :meth:`take` (the owner calls
    it, e.g. on a timer on the GUI thread), so reading never blocks the owner's thread.
    """

    thread_name = "tfstudio-parts-reader"
