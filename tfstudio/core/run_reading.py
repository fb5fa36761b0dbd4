"""Reading run folders' event files: streamed as numpy columns, followed as they grow.

Split from :mod:`tfstudio.core.runs` (which re-exports these names). Pure Python and
numpy: event files are read by :mod:`tfstudio.core.eventfile`. Reads the folder and its
sub-folders (Keras's ``TensorBoard`` callback writes ``train/`` and ``validation/``);
a folder may be a URL (see :mod:`tfstudio.core.locations`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfstudio.core.eventfile import (
    EventFileReader,
    Histogram,
    TagColumns,
    masked_crc,
    merge_columns,
)
from tfstudio.core.locations import Location as Location
from tfstudio.core.locations import UnsupportedLocation, UrlPath, fs_for, location

PathLike = str | os.PathLike[str] | UrlPath
EVENT_FILE_MARK = "tfevents"
STEP_PREFIX = "step/"
EPOCH_PREFIX = "epoch/"


def _listing(p: Location) -> tuple[Any, list[str]]:
    """``p``'s file system and its entries' names, sorted (none when it cannot be listed)."""
    files = fs_for(p)
    try:
        return files, sorted(files.listdir(p))  # type: ignore[arg-type]
    except UnsupportedLocation:
        raise
    except OSError:
        return files, []


def _subdirs(p: Location) -> list[Location]:
    """Sub-folders of ``p``, in name order (empty when it cannot be listed)."""
    files, names = _listing(p)
    out = []
    for name in names:
        sub = p / name
        try:
            if files.isdir(sub):  # type: ignore[arg-type]
                out.append(sub)
        except OSError:
            continue
    return out


def _pick_loss(scalars: dict[str, TagColumns]) -> TagColumns | None:
    for tag in (f"{STEP_PREFIX}loss", f"{EPOCH_PREFIX}loss", "epoch_loss", "train/epoch_loss"):
        if tag in scalars:
            return scalars[tag]
    for tag, curve in scalars.items():
        if tag.endswith("loss") and "val" not in tag:
            return curve
    return None


# -- reading event files ---------------------------------------------------------
@dataclass(slots=True)
class TagPoints:
    """One scalar series as Python lists: steps, values and wall times, in file order."""

    steps: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)


def event_files(folder: PathLike) -> Iterator[Location]:
    """The TensorBoard event files directly in ``folder``, in name (time) order."""
    p = location(folder)
    files, names = _listing(p)
    return (p / n for n in names if EVENT_FILE_MARK in n and files.isfile(p / n))  # type: ignore[arg-type]


FRESH_S = 0.05  # a file changed this recently may change again within its clock tick


def local_stamp(path: Location) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of a local file or folder: unchanged means not changed.

    None for a URL, a missing file, or one changed so recently that a later change
    could leave the same stamp (file-system clocks tick in milliseconds).
    """
    if not isinstance(path, Path):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if time.time_ns() - st.st_mtime_ns < FRESH_S * 1e9:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _scan(folder: Path) -> tuple[list[str], list[str]]:
    """Names of the event files and of the sub-folders of a local folder (sorted; one
    system call, no stat per entry)."""
    files: list[str] = []
    dirs: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir():
                    dirs.append(entry.name)
                elif EVENT_FILE_MARK in entry.name and entry.is_file():
                    files.append(entry.name)
    except OSError:
        pass
    return sorted(files), sorted(dirs)


def _event_folders(run_dir: Location) -> Iterator[tuple[Location, str]]:
    """The folder and its sub-folders that hold event files, with their tags' prefixes."""
    yield run_dir, ""
    for sub in _subdirs(run_dir):
        if any(event_files(sub)):
            yield sub, sub.name + "/"


class RunFolderReader:
    """Streams a run folder's scalar points as numpy columns; call :meth:`read` again to follow.

    Event files in the folder and in its sub-folders (Keras's ``TensorBoard``
    callback writes ``train/`` and ``validation/``) are read; tags from a
    sub-folder are prefixed with its name (``validation/epoch_loss``). Each
    :meth:`read` returns only the points appended since the last one; the reader
    keeps none, so a run of any length streams through it. Meant for a
    background thread: :meth:`cancel` stops a read between chunks.
    """

    def __init__(self, run_dir: PathLike) -> None:
        self.path = location(run_dir)
        self._files: dict[Location, tuple[EventFileReader, str]] = {}
        self._kinds: dict[str, dict[str, str]] = {}  # per prefix: tag -> plugin name
        self._histograms: dict[str, list[Histogram]] = {}
        self._cancelled = threading.Event()
        # The folders' stamps when last listed: while none changes there is no new file
        # (a followed run costs a stat per folder and file then).
        self._subfolders: list[str] = []
        self._names: set[str] = set()  # event files known, as paths within the folder
        self._stamps: tuple[tuple[int, int, int] | None, ...] | None = None
        self.listings = 0  # how often the folders were listed (for tests and benchmarks)

    def _folder_stamps(self) -> tuple[tuple[int, int, int] | None, ...] | None:
        folders = (self.path, *(self.path / d for d in self._subfolders))
        stamps = tuple(local_stamp(f) for f in folders)
        return None if None in stamps else stamps

    def discover(self, refresh: bool = True) -> list[EventFileReader]:
        """Look for new event files (and with ``refresh`` their sizes); returns their readers."""
        stamps = self._folder_stamps()
        if stamps is None or stamps != self._stamps:
            self.listings += 1
            if isinstance(self.path, Path):
                self._discover_local()
            else:
                for folder, prefix in _event_folders(self.path):
                    for path in event_files(folder):
                        self._add_file(path, prefix)
            self._stamps = stamps if stamps == self._folder_stamps() else None
        readers = [r for r, _ in self._files.values()]
        for r in readers:
            if refresh and not r.damaged:
                r.refresh_size()
        return readers

    def _discover_local(self) -> None:
        files, dirs = _scan(self.path)
        self._subfolders = dirs
        known = self._names
        for name in files:
            if name not in known:
                known.add(name)
                self._add_file(self.path / name, "")
        for d in dirs:
            for name in _scan(self.path / d)[0]:
                if f"{d}/{name}" not in known:
                    known.add(f"{d}/{name}")
                    self._add_file(self.path / d / name, d + "/")

    def _add_file(self, path: Location, prefix: str) -> None:
        if path not in self._files:
            kinds = self._kinds.setdefault(prefix, {})
            self._files[path] = (EventFileReader(path, kinds), prefix)

    def read(self, max_bytes: int | None = None) -> dict[str, TagColumns]:
        """The scalar points appended since the last call, per tag (about ``max_bytes`` at most)."""
        self.discover(refresh=False)  # each file's read looks at its size
        new: dict[str, TagColumns] = {}
        budget = max_bytes
        for reader, prefix in self._files.values():
            if self._cancelled.is_set() or (budget is not None and budget <= 0):
                break
            before = reader.offset
            merge_columns(new, reader.read(budget, self._cancelled.is_set), prefix)
            for tag, hists in reader.histograms_read().items():
                self._histograms.setdefault(prefix + tag, []).extend(hists)
            if budget is not None:
                budget -= reader.offset - before
        return new

    def histograms_read(self) -> dict[str, list[Histogram]]:
        """The histograms read since the last call, per tag (then forgotten here)."""
        out, self._histograms = self._histograms, {}
        return out

    def sample(self, count: int) -> dict[str, TagColumns]:
        """An overview of the whole folder: a few points from ``count`` evenly spaced places
        of each event file, per tag in step order (see :meth:`EventFileReader.sample`)."""
        out: dict[str, TagColumns] = {}
        for reader, prefix in list(self._files.values()):
            if self._cancelled.is_set():
                break
            merge_columns(out, reader.sample(count), prefix)
        for tag, cols in out.items():
            order = np.argsort(cols.steps, kind="stable")
            out[tag] = TagColumns(cols.steps[order], cols.values[order], cols.wall[order])
        return out

    def read_steps(
        self, first: int, last: int, cancelled: Callable[[], bool] | None = None
    ) -> dict[str, TagColumns]:
        """Every point read so far with ``first <= step <= last``, read again from the files.

        Reads only the pieces of each file that hold such steps: for zooming into a
        range of a run whose store keeps only a decimated envelope. Safe beside the
        thread that reads on (it only reads the pieces already indexed).
        ``cancelled``: checked between pieces; reading stops when it returns True.
        """
        out: dict[str, TagColumns] = {}
        for reader, prefix in list(self._files.values()):
            if cancelled is not None and cancelled():
                break
            merge_columns(out, reader.read_steps(first, last, cancelled), prefix)
        return out

    def progress(self) -> tuple[int, int]:
        """(bytes read, bytes in the folder's event files when last looked at)."""
        done = total = 0
        for reader, _ in self._files.values():
            total += reader.size
            done += reader.size if reader.damaged else min(reader.offset, reader.size)
        return done, total

    def notes(self) -> list[str]:
        """One sentence per damaged event file (empty when all read cleanly)."""
        return [r.note for r, _ in self._files.values() if r.note]

    def cancel(self) -> None:
        """Stop the read in progress (from any thread) and any later one."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled.is_set()


class RunReader:
    """Reads a run folder's scalars and histograms; call :meth:`update` again to follow it.

    Keeps every point (as lists in :attr:`scalars`): for the inspector and small
    runs. A view of long runs streams :class:`RunFolderReader`'s columns into a
    bounded store instead.
    """

    def __init__(self, run_dir: PathLike) -> None:
        self.path = location(run_dir)
        self.scalars: dict[str, TagPoints] = {}
        self.histograms: dict[str, list[Histogram]] = {}
        self.folder = RunFolderReader(self.path)

    def update(self) -> int:
        """Read whatever was appended; returns how many new points (scalars + histograms)."""
        new = 0
        for tag, cols in self.folder.read().items():
            curve = self.scalars.get(tag)
            if curve is None:
                curve = self.scalars[tag] = TagPoints()
            curve.steps.extend(cols.steps.tolist())
            curve.values.extend(cols.values.tolist())
            curve.wall.extend(cols.wall.tolist())
            new += len(cols)
        for tag, hists in self.folder.histograms_read().items():
            self.histograms.setdefault(tag, []).extend(hists)
            new += len(hists)
        return new

    def notes(self) -> list[str]:
        """One sentence per damaged event file (see :meth:`RunFolderReader.notes`)."""
        return self.folder.notes()


def read_scalars(run_dir: PathLike) -> dict[str, TagPoints]:
    """Every scalar series in a run folder (or any TensorBoard log folder), as lists."""
    reader = RunReader(run_dir)
    reader.update()
    return reader.scalars


def read_columns(run_dir: PathLike) -> dict[str, TagColumns]:
    """Every scalar series in a run folder, as numpy columns."""
    return RunFolderReader(run_dir).read()


# -- a glance at a log folder without run.json ----------------------------------------
GLANCE_BYTES = 1 << 20  # an event file up to this size is read whole when listed
TAIL_BYTES = 256 << 10


def _tail_reader(path: Location, size: int, kinds: dict[str, str]) -> EventFileReader | None:
    """A reader positioned at the first whole record of the file's last ``TAIL_BYTES``."""
    reader = EventFileReader(path, kinds)
    start = max(0, size - TAIL_BYTES)
    try:
        raw = fs_for(path).read_range(path, start, size - start)  # type: ignore[arg-type]
    except OSError:
        return None
    for p in range(min(len(raw) - 12, 1 << 16)):
        if int.from_bytes(raw[p + 8 : p + 12], "little") != masked_crc(raw[p : p + 8]):
            continue
        length = int.from_bytes(raw[p : p + 8], "little")
        end = p + 12 + length
        if end + 4 <= len(raw):
            if int.from_bytes(raw[end : end + 4], "little") != masked_crc(raw[p + 12 : end]):
                continue
        reader.offset = start + p
        return reader
    return None


def glance(run_dir: PathLike) -> tuple[float | None, int | None, float | None]:
    """(start time, last step, last loss) of a log folder, reading only heads and tails.

    An event file up to :data:`GLANCE_BYTES` is read whole; a bigger one only its
    first and last few hundred kilobytes. None where a figure is not known.
    """
    started: float | None = None
    heads: dict[str, TagColumns] = {}
    tails: dict[str, TagColumns] = {}
    for folder, prefix in _event_folders(location(run_dir)):
        for path in event_files(folder):
            kinds: dict[str, str] = {}
            head = EventFileReader(path, kinds)
            size = head.refresh_size()
            columns = head.read(GLANCE_BYTES if size > GLANCE_BYTES else None)
            merge_columns(heads, columns, prefix)
            if size > GLANCE_BYTES:
                tail = _tail_reader(path, size, kinds)
                if tail is None or tail.offset <= head.offset:
                    tail = head  # the tail overlaps the head (or was not found): read on
                columns = tail.read(TAIL_BYTES)
            merge_columns(tails, columns, prefix)
    for cols in heads.values():
        if len(cols):
            first = float(cols.wall.min())
            started = first if started is None else min(started, first)
    steps = max((int(c.steps[-1]) for c in tails.values() if len(c)), default=None)
    loss = _pick_loss(tails)
    final_loss = float(loss.values[-1]) if loss is not None and len(loss.values) else None
    return started, steps, final_loss
