"""Run folders on disk: where they go, what they hold, and reading them back.

A run folder holds TensorBoard event files (``events.out.tfevents.*``) and
``run.json``. This module is pure Python (plus the ``tensorboard`` package's
protobuf classes and its TensorFlow-free record reader), so the window can list,
open and follow runs without importing TensorFlow. It reads any TensorBoard log
directory, e.g. one written by Keras's ``TensorBoard`` callback or ``tf.summary``.

A runs directory or run folder may be a URL (``gs://bucket/runs``): see
:mod:`tfstudio.core.locations`. Local paths are handled by ``os`` as always.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tfstudio.core.locations import (
    GFileFS,
    Location,
    UnsupportedLocation,
    UrlPath,
    fs_for,
    location,
)

RUN_JSON = "run.json"
DEFAULT_DIRNAME = "tfstudio-runs"
STEP_PREFIX = "step/"
EPOCH_PREFIX = "epoch/"
# A "running" run whose run.json has not been refreshed for this long is taken as dead
# (the writer refreshes it every few seconds, even while paused).
STALE_AFTER_S = 60.0
EVENT_FILE_MARK = "tfevents"
LOGDIR_ENV = "TFSTUDIO_LOGDIR"


# -- where runs go -----------------------------------------------------------
PathLike = str | os.PathLike[str] | UrlPath


def resolve_logdir(logdir: PathLike | None, run_cwd: str | os.PathLike[str]) -> Location:
    """The runs directory of a run: ``logdir`` if given, else ``<run_cwd>/tfstudio-runs``.

    ``$TFSTUDIO_LOGDIR``, when set, replaces the default. The window runs scripts
    in their own folder and the headless runner in the working directory, so the
    default lands beside the script or in the cwd. A URL (``gs://...``) stays a URL.
    """
    chosen = logdir or os.environ.get(LOGDIR_ENV)
    if chosen:
        return location(chosen, resolve=True)
    return Path(run_cwd).resolve() / DEFAULT_DIRNAME


def new_run_dir(
    logdir: PathLike, script: str, when: float | None = None, fs: GFileFS | None = None
) -> Location:
    """Create and return a fresh ``<script-stem>-<YYYYmmdd-HHMMSS>`` folder in ``logdir``.

    ``fs``: how to reach a URL ``logdir`` (the worker passes TensorFlow's gfile).
    """
    stamp = datetime.fromtimestamp(time.time() if when is None else when).strftime("%Y%m%d-%H%M%S")
    base = location(logdir) / f"{Path(script).stem}-{stamp}"
    files = fs_for(base, fs)
    path, n = base, 1
    while True:
        try:
            files.mkdir_new(path)  # type: ignore[arg-type]
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")


def write_run_json(run_dir: PathLike, info: dict[str, Any], fs: GFileFS | None = None) -> None:
    """Replace ``run.json`` atomically (a reader never sees half a file)."""
    path = location(run_dir) / RUN_JSON
    data = json.dumps(info, indent=1, default=str).encode("utf-8")
    fs_for(path, fs).write_bytes(path, data)  # type: ignore[arg-type]


def read_run_json(run_dir: PathLike) -> dict[str, Any]:
    """``run.json`` of a run folder as a dict; empty when missing or unreadable."""
    path = location(run_dir) / RUN_JSON
    try:
        data = json.loads(fs_for(path).read_bytes(path).decode("utf-8"))  # type: ignore[arg-type]
    except UnsupportedLocation:
        raise
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# -- listing -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run folder as listed: what the runs panel and ``tfstudio runs`` show."""

    path: Location
    name: str
    script: str
    started: float | None
    status: str
    steps: int | None
    final_loss: float | None
    info: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def date(self) -> str:
        """Start time as ``YYYY-mm-dd HH:MM:SS`` (or ``?``)."""
        if self.started is None:
            return "?"
        return datetime.fromtimestamp(self.started).strftime("%Y-%m-%d %H:%M:%S")


def run_status(info: dict[str, Any], now: float | None = None) -> str:
    """Status from ``run.json``: a "running" run whose writer is gone is "interrupted"."""
    status = str(info.get("status") or "unknown")
    if status != "running":
        return status
    now = time.time() if now is None else now
    host, pid = info.get("hostname"), info.get("pid")
    if host == socket.gethostname() and isinstance(pid, int) and pid > 0:
        if not _pid_alive(pid):
            return "interrupted"
    updated = info.get("updated")
    if isinstance(updated, int | float) and now - updated > STALE_AFTER_S:
        return "interrupted"
    return status


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    # A zombie (killed, not yet reaped by its parent) is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


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


def is_run_dir(path: PathLike) -> bool:
    """True for a tfstudio run folder or a TensorBoard log folder.

    A log folder holds event files itself or in its sub-folders (Keras's
    ``TensorBoard`` callback writes ``train/`` and ``validation/``).
    """
    p = location(path)
    try:
        if fs_for(p).isfile(p / RUN_JSON) or any(event_files(p)):  # type: ignore[arg-type]
            return True
    except UnsupportedLocation:
        raise
    except OSError:
        return False
    return any(any(event_files(sub)) for sub in _subdirs(p))


def list_runs(logdir: PathLike) -> list[RunInfo]:
    """The runs in a runs directory, oldest first (folders with run.json or event files).

    Raises :class:`UnsupportedLocation` for a URL no file system here can read.
    """
    root = location(logdir)
    if not fs_for(root).isdir(root):  # type: ignore[arg-type]
        return []
    runs = [describe_run(p) for p in _subdirs(root) if is_run_dir(p)]
    runs.sort(key=lambda r: (r.started or 0.0, r.name))
    return runs


def describe_run(run_dir: PathLike) -> RunInfo:
    """Summary of one run folder from its run.json (event files when there is none)."""
    p = location(run_dir)
    info = read_run_json(p)
    steps = info.get("steps")
    final_loss = info.get("final_loss")
    if not info:
        scalars = read_scalars(p)
        loss = _pick_loss(scalars)
        steps = max((c.steps[-1] for c in scalars.values() if c.steps), default=None)
        final_loss = loss.values[-1] if loss is not None and loss.values else None
        started = min((c.wall[0] for c in scalars.values() if c.wall), default=None)
        return RunInfo(p, p.name, "", started, "tensorboard", steps, final_loss, info)
    started = info.get("start_time")
    return RunInfo(
        p,
        p.name,
        str(info.get("script") or ""),
        float(started) if isinstance(started, int | float) else None,
        run_status(info),
        int(steps) if isinstance(steps, int | float) else None,
        float(final_loss) if isinstance(final_loss, int | float) else None,
        info,
    )


def _pick_loss(scalars: dict[str, Curve]) -> Curve | None:
    for tag in (f"{STEP_PREFIX}loss", f"{EPOCH_PREFIX}loss", "epoch_loss", "train/epoch_loss"):
        if tag in scalars:
            return scalars[tag]
    for tag, curve in scalars.items():
        if tag.endswith("loss") and "val" not in tag:
            return curve
    return None


def format_run_line(run: RunInfo) -> str:
    """One terminal line: name, status, steps, final loss, date."""
    steps = "-" if run.steps is None else str(run.steps)
    loss = "-" if run.final_loss is None else f"{run.final_loss:.4g}"
    return f"{run.name:<36} {run.status:<12} {steps:>8} steps  loss {loss:<10} {run.date()}"


def rename_run(run_dir: PathLike, new_name: str) -> Location:
    """Rename a run folder in place; returns the new path."""
    name = new_name.strip()
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise ValueError(f"not a valid folder name for a run: {new_name!r}")
    src = location(run_dir)
    dst = src.with_name(name)
    files = fs_for(src)
    if files.exists(dst):  # type: ignore[arg-type]
        raise FileExistsError(f"a run named {name!r} already exists in {src.parent}")
    files.rename(src, dst)  # type: ignore[arg-type]
    return dst


def delete_run(run_dir: PathLike) -> None:
    """Delete a run folder and everything in it (only a folder that looks like a run)."""
    p = location(run_dir)
    if not is_run_dir(p):
        raise ValueError(f"{p} is not a run folder (no run.json, no event files); not deleting it")
    fs_for(p).rmtree(p)  # type: ignore[arg-type]


# -- reading event files ---------------------------------------------------------
@dataclass(slots=True)
class Curve:
    """One scalar series: steps, values and wall times, in file order."""

    steps: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Histogram:
    """One histogram at one step: bucket edges (``len(counts) + 1``) and counts."""

    step: int
    wall: float
    edges: tuple[float, ...]
    counts: tuple[float, ...]


def event_files(folder: PathLike) -> Iterator[Location]:
    """The TensorBoard event files directly in ``folder``, in name (time) order."""
    p = location(folder)
    files, names = _listing(p)
    return (p / n for n in names if EVENT_FILE_MARK in n and files.isfile(p / n))  # type: ignore[arg-type]


class _RecordFile:
    """Reads TFRecord-framed records from one file, resuming where it stopped.

    Uses TensorBoard's TensorFlow-free record reader; a record still being
    written (truncated at the end) is read again, whole, by a later call.
    """

    def __init__(self, path: Location) -> None:
        self.path = path
        self._fs = fs_for(path)
        self._reader: Any = None
        self._size = -1

    def records(self) -> Iterator[bytes]:
        from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow

        try:
            size = self._fs.size(self.path)  # type: ignore[arg-type]
        except OSError:
            return
        if size == self._size:
            return  # nothing appended since the last read
        if self._reader is None:
            self._reader = pywrap_tensorflow.PyRecordReader_New(str(self.path))
        self._size = size
        while True:
            try:
                self._reader.GetNext()
            except errors.OutOfRangeError:
                return
            except errors.DataLossError:
                self._size = -1  # partial record: read again next time
                return
            yield self._reader.record()


class RunReader:
    """Reads a run folder's scalars and histograms; call :meth:`update` again to follow it.

    Event files in the folder and in its sub-folders (Keras's ``TensorBoard``
    callback writes ``train/`` and ``validation/``) are read; tags from a
    sub-folder are prefixed with its name (``validation/epoch_loss``). Each
    :meth:`update` reads only what was appended since the last one.
    """

    def __init__(self, run_dir: PathLike) -> None:
        self.path = location(run_dir)
        self.scalars: dict[str, Curve] = {}
        self.histograms: dict[str, list[Histogram]] = {}
        self._files: dict[Location, _RecordFile] = {}
        self._kinds: dict[str, str] = {}  # tag -> plugin name, from the first metadata seen

    def update(self) -> int:
        """Read whatever was appended; returns how many new points (scalars + histograms)."""
        from tensorboard.compat.proto import event_pb2

        new = 0
        for folder, prefix in self._folders():
            for path in event_files(folder):
                reader = self._files.get(path)
                if reader is None:
                    reader = self._files[path] = _RecordFile(path)
                for record in reader.records():
                    event = event_pb2.Event.FromString(record)
                    if event.HasField("summary"):
                        new += self._add(event, prefix)
        return new

    def _folders(self) -> Iterable[tuple[Location, str]]:
        yield self.path, ""
        for sub in _subdirs(self.path):
            if any(event_files(sub)):
                yield sub, sub.name + "/"

    def _add(self, event: Any, prefix: str) -> int:
        added = 0
        for value in event.summary.value:
            tag = prefix + value.tag
            plugin = value.metadata.plugin_data.plugin_name if value.HasField("metadata") else ""
            if plugin:
                self._kinds.setdefault(tag, plugin)
            kind = self._kinds.get(tag, "")
            which = value.WhichOneof("value")
            if which == "simple_value":
                self._scalar(tag, event, float(value.simple_value))
            elif which == "histo":
                h = value.histo
                edges = (h.min, *h.bucket_limit)
                self._histogram(tag, event, edges, tuple(h.bucket))
            elif which == "tensor":
                array = tensor_values(value.tensor)
                if array is None:
                    continue
                values, shape = array
                if kind == "histograms" and len(shape) == 2 and shape[1] == 3:
                    rows = [values[i * 3 : i * 3 + 3] for i in range(shape[0])]
                    edges = tuple(r[0] for r in rows) + ((rows[-1][1],) if rows else ())
                    self._histogram(tag, event, edges, tuple(r[2] for r in rows))
                elif kind in ("scalars", "") and len(values) == 1 and not shape:
                    self._scalar(tag, event, float(values[0]))
                else:
                    continue
            else:
                continue
            added += 1
        return added

    def _scalar(self, tag: str, event: Any, value: float) -> None:
        curve = self.scalars.get(tag)
        if curve is None:
            curve = self.scalars[tag] = Curve()
        curve.steps.append(int(event.step))
        curve.values.append(value)
        curve.wall.append(float(event.wall_time))

    def _histogram(self, tag: str, event: Any, edges: tuple, counts: tuple) -> None:
        self.histograms.setdefault(tag, []).append(
            Histogram(int(event.step), float(event.wall_time), tuple(map(float, edges)), counts)
        )


_DTYPES = {1: "<f", 2: "<d", 3: "<i", 9: "<q", 19: "<e", 4: "<B", 6: "<b", 10: "<?"}


def tensor_values(tensor: Any) -> tuple[list[float], tuple[int, ...]] | None:
    """Flat numeric values and shape of a TensorProto (None for strings and unknown types)."""
    shape = tuple(int(d.size) for d in tensor.tensor_shape.dim)
    dtype = int(tensor.dtype)
    if tensor.tensor_content:
        fmt = _DTYPES.get(dtype)
        if fmt is None:
            return None
        width = struct.calcsize(fmt)
        count = len(tensor.tensor_content) // width
        return list(struct.unpack(f"<{count}{fmt[1]}", tensor.tensor_content)), shape
    for name in ("float_val", "double_val", "int_val", "int64_val", "half_val", "bool_val"):
        vals = getattr(tensor, name)
        if len(vals):
            out = [float(v) for v in vals]
            if name == "half_val":
                out = [struct.unpack("<e", struct.pack("<H", int(v)))[0] for v in vals]
            n = 1
            for d in shape:
                n *= d
            if shape and len(out) == 1 and n > 1:
                out = out * n  # a proto may store one value for a filled tensor
            return out, shape
    return None


def read_scalars(run_dir: PathLike) -> dict[str, Curve]:
    """Every scalar series in a run folder (or any TensorBoard log folder)."""
    reader = RunReader(run_dir)
    reader.update()
    return reader.scalars


def export_scalars_csv(run_dir: PathLike, out: str | os.PathLike[str]) -> int:
    """Write a run's scalars as CSV rows ``tag,step,value,wall_time``; returns the row count."""
    scalars = read_scalars(run_dir)
    rows = 0
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["tag", "step", "value", "wall_time"])
        for tag in sorted(scalars):
            c = scalars[tag]
            for s, v, t in zip(c.steps, c.values, c.wall, strict=True):
                w.writerow([tag, s, repr(v), f"{t:.6f}"])
                rows += 1
    return rows
