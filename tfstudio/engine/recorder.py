"""Recorder: a run's events -> a run folder (TensorBoard event files + ``run.json``).

Runs off the training thread: a :class:`Recorder` is a sink of the run's pump
(``core/pump.py``), which hands it each batch of events (:meth:`Recorder.write`).

Event records are TensorBoard ``Event`` protos, one record per step holding all
of that step's values, framed as TensorFlow's record writer frames them: for a
local folder by :class:`~tfstudio.core.eventfile.RecordFileWriter` (a block of
steps in one write, the GIL held throughout), for a URL by
``tf.io.TFRecordWriter`` (TensorFlow's file systems). We do not call
``tf.summary.scalar`` per value: measured here it costs ~0.8 ms per eager call
(a batched ``tf.function`` still ~1.6 ms per call + 19 us per value) against
~30 us per step for a proto + record write; the files are the same format.

Adding a new kind of event is one function registered in :data:`WRITERS`.

A run folder may be a URL (``gs://bucket/runs/...``): the event file, the folder and
``run.json`` are then written through ``tf.io.gfile`` (TensorFlow's file systems);
a local path is written with ``os`` as always.
"""

from __future__ import annotations

import copy
import errno
import itertools
import math
import os
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from tfstudio.core.eventfile import RecordFileWriter
from tfstudio.core.events import (
    CheckpointRestored,
    EpochEnded,
    FitEnded,
    FitStarted,
    GradientStats,
    LayerOutputs,
    LearningRate,
    ModelBuilt,
    RunDevices,
    RunEnded,
    RunRecording,
    RunStarted,
    StepColumns,
    StepEnded,
    WeightStats,
    join_steps,
)
from tfstudio.core.locations import GFileFS, UrlPath, fs_for, location
from tfstudio.core.pump import Pump
from tfstudio.core.runs import (
    EPOCH_PREFIX,
    RUNNING_PREFIX,
    STEP_PREFIX,
    new_run_dir,
    resolve_logdir,
    write_run_json,
)

FLUSH_EVERY_S = 0.5  # a follower sees new points within ~1 s (flush + its poll)
SMALL_BLOCK = 24  # fewer rows than this are encoded one by one (cheaper than numpy's set-up)
# Steps wait (as columns) until the next flush, another kind of event or this many rows,
# then are encoded as one block: a few pump beats' worth at once, not a few rows a beat.
PENDING_ROWS = 4096
# A periodic flush rewrites run.json when only these changed at most this often (readers
# re-read a running run's run.json every RUN_JSON_EVERY_S = 2 s): a rewrite costs ~1 ms.
INFO_EVERY_S = 2.0
_COUNTS = ("steps", "epochs", "final_loss", "updated")
_FILES = itertools.count()  # event files made by this process


def tf_fs() -> GFileFS:
    """URL access for the worker: ``tf.io.gfile``, TensorFlow's file systems (gs://, ram://...)."""
    import tensorflow as tf

    return GFileFS(tf.io.gfile, "TensorFlow's tf.io.gfile")


class Recorder:
    """Writes one run folder.

    Args:
        run_dir: the folder (created if missing); a local path or a URL that
            TensorFlow's file systems write (``gs://...``).
        flush_every: seconds between flushes of the event file and ``run.json``.
        info: extra ``run.json`` fields known at start (script, argv, ...).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str] | UrlPath,
        *,
        flush_every: float = FLUSH_EVERY_S,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        import tensorflow as tf
        from tensorboard.compat.proto import event_pb2, summary_pb2

        self.run_dir = location(run_dir)
        self._fs = tf_fs() if isinstance(self.run_dir, UrlPath) else None
        fs_for(self.run_dir, self._fs).makedirs(self.run_dir)  # type: ignore[arg-type]
        self.flush_every = flush_every
        self.errors: list[str] = []
        # Told once, at the first failure (a full disk): the run goes on unrecorded.
        self.on_error: Callable[[str], None] | None = None
        self._event_pb2 = event_pb2
        self._summary_pb2 = summary_pb2
        now = time.time()
        name = (
            f"events.out.tfevents.{int(now)}.{socket.gethostname()}.{os.getpid()}."
            f"{next(_FILES):05d}.v2"  # files of one second and process sort in creation order
        )
        self._writer: Any = (
            _TFRecords(tf.io.TFRecordWriter(str(self.run_dir / name)))
            if isinstance(self.run_dir, UrlPath)
            else RecordFileWriter(self.run_dir / name)  # a block of steps in one write
        )
        self._write_event(event_pb2.Event(wall_time=now, file_version="brain.Event:2"))
        self._described: set[str] = set()
        self._pending: list[StepColumns] = []  # steps not yet encoded (see PENDING_ROWS)
        self._pending_rows = 0
        self._stepped = False  # the first steps were written
        self._last_flush = time.monotonic()
        self._closed = False
        self.info: dict[str, Any] = {
            "format": 1,
            "status": "running",
            "start_time": now,
            "updated": now,
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "python": sys.version.split()[0],
            "tensorflow": tf.__version__,
            "execution_mode": "eager" if tf.config.functions_run_eagerly() else "graph",
            "devices": [],  # from RunDevices, once the script has initialised them
            "segments": [],
            "steps": 0,
            "final_loss": None,
        }
        self.info.update(info or {})
        self._t0_wall = now
        self._last_wall: float | None = None  # the newest step's wall time (see _now_wall)
        write_run_json(self.run_dir, self.info, self._fs)
        self._info_at = time.monotonic()  # when run.json was last written
        self._info_shape: dict[str, Any] = {}  # what it said besides _COUNTS

    @classmethod
    def for_script(
        cls, logdir: str | os.PathLike[str] | UrlPath, script: str, **kwargs: Any
    ) -> Recorder:
        """A recorder in a new ``<script-stem>-<YYYYmmdd-HHMMSS>`` folder of ``logdir``."""
        fs = tf_fs() if isinstance(location(logdir), UrlPath) else None
        return cls(new_run_dir(logdir, script, fs=fs), **kwargs)

    # -- writing ---------------------------------------------------------
    def write(self, events: Iterable[object]) -> None:
        """Record a batch of events; flushes when ``flush_every`` has passed. Never raises."""
        if self._closed:
            return
        for event in events:
            kind = type(event)
            if kind is StepColumns:
                if len(event):  # type: ignore[arg-type]
                    self._pending.append(event)  # type: ignore[arg-type]
                    self._pending_rows += len(event)  # type: ignore[arg-type]
                    # what follows these steps is dated after them (see _now_wall)
                    newest = self._t0_wall + float(event.time.max())  # type: ignore[attr-defined]
                    if self._last_wall is None or newest > self._last_wall:
                        self._last_wall = newest
                continue
            writer = WRITERS.get(kind)
            if writer is None:
                continue
            if self._pending and kind not in _BESIDE_STEPS:
                self._write_pending()  # the steps before it go first: the run's order
            self._record(writer, event)
        if self._pending_rows >= PENDING_ROWS:
            self._write_pending()
        if self._pending and not self._stepped:
            self._stepped = True
            self.flush()  # a run's first steps reach the disk at once (a reader sees it begin)
        elif time.monotonic() - self._last_flush >= self.flush_every:
            self.flush(info=False)

    def _record(self, writer: Callable[[Recorder, Any], None], event: object) -> None:
        try:
            writer(self, event)
        except Exception as exc:  # noqa: BLE001 - recording must never end a run
            self._error(f"{type(event).__name__}: {exc!r}")

    def _write_pending(self) -> None:
        """Encode the steps waiting as one block per fit (numpy's path, not row by row)."""
        pending, self._pending, self._pending_rows = self._pending, [], 0
        for block in join_steps(pending):
            self._record(_step_columns, block)

    def flush(self, info: bool = True) -> None:
        """Push buffered records to disk and refresh ``run.json``.

        Args:
            info: refresh ``run.json`` now; False (the periodic flush): only when more
                than the step count and last loss changed, or every ``INFO_EVERY_S``
                (a reader re-reads a running run's ``run.json`` that often).
        """
        if self._pending:
            self._write_pending()
        try:
            self._writer.flush()
            now = time.monotonic()
            shape = {k: v for k, v in self.info.items() if k not in _COUNTS}
            if info or now - self._info_at >= INFO_EVERY_S or shape != self._info_shape:
                self.info["updated"] = time.time()
                write_run_json(self.run_dir, self.info, self._fs)
                self._info_at, self._info_shape = now, copy.deepcopy(shape)
        except Exception as exc:  # noqa: BLE001
            self._error(f"flush: {exc!r}")
        self._last_flush = time.monotonic()

    def close(self, ended: RunEnded | None = None) -> None:
        """Record how the run ended, flush, and close the files (idempotent)."""
        if self._closed:
            return
        if self._pending:
            self._write_pending()
        if ended is not None:
            _run_ended(self, ended)
        elif self.info.get("status") == "running":
            self.info["status"] = "interrupted"
        self.flush()
        try:
            self._writer.close()
        except Exception as exc:  # noqa: BLE001
            self._error(f"close: {exc!r}")
        self._closed = True

    # -- building blocks for event writers --------------------------------
    def scalars(
        self, step: int, values: Mapping[str, float], wall_time: float | None = None
    ) -> None:
        """One event at ``step`` with a scalar per tag (NaN kept: it shows a blow-up).

        Encoded by hand (the hot path: one per training step): the bytes are what
        ``tf.summary.scalar`` writes, a float32 tensor with the scalars plugin's
        metadata on a tag's first value, at a third of the protobuf library's cost.
        """
        wall = time.time() if wall_time is None else wall_time
        self._writer.write(scalars_event(step, values, wall, self._described))

    def histogram(
        self,
        tag: str,
        step: int,
        edges: Iterable[float],
        counts: Iterable[float],
        wall_time: float | None = None,
    ) -> None:
        """One histogram (bucket ``edges``, one more than ``counts``) in TensorBoard's v2 format."""
        wall = time.time() if wall_time is None else wall_time
        self._writer.write(histogram_event(tag, step, edges, counts, wall))

    def _write_event(self, event: Any) -> None:
        self._writer.write(event.SerializeToString())

    def _wall(self, run_time: float) -> float:
        """Wall time of an event that carries seconds since the run started."""
        wall = self._t0_wall + run_time
        self._last_wall = wall if self._last_wall is None else max(self._last_wall, wall)
        return wall

    def _now_wall(self) -> float:
        """Wall time of an event that carries none (the learning rate, inspector samples):
        the newest step's, which it follows, so records keep the run's order by wall time
        (a reader splits at a restore by it)."""
        return self._last_wall if self._last_wall is not None else time.time()

    def _error(self, text: str) -> None:
        first = not self.errors
        if len(self.errors) < 20:
            self.errors.append(text)
        if first and self.on_error is not None:
            try:
                self.on_error(text)
            except Exception:  # noqa: BLE001 - telling must not break recording either
                pass


class _TFRecords:
    """TensorFlow's record writer (for URLs: its file systems) with ``write_many``."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer

    def write(self, record: bytes) -> None:
        self._writer.write(record)

    def write_many(self, records: Iterable[bytes]) -> None:
        for record in records:
            self._writer.write(record)

    def write_blocks(self, blocks: list[tuple[np.ndarray, Any]]) -> None:
        """:func:`scalar_blocks`' records, record by record (no framing of our own here)."""
        self.write_many(records_in_order(blocks))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


# -- hand-encoded protobuf for per-step scalars ----------------------------------
_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")
# Summary.Value.metadata = SummaryMetadata(plugin_data=PluginData(plugin_name="scalars"))
_SCALARS_METADATA = b"\x4a\x0b\x0a\x09\x0a\x07scalars"
_TAGS: dict[str, bytes] = {}
_PREFIXES: dict[str, bytes] = {}  # tag -> a described value's bytes before its float32
_SMALL_VARINTS = [bytes((n,)) for n in range(128)]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def histogram_event(
    tag: str, step: int, edges: Iterable[float], counts: Iterable[float], wall: float
) -> bytes:
    """The serialized ``Event`` :meth:`Recorder.histogram` writes (TensorBoard's v2 format).

    Encoded by hand (an inspector sample writes one per variable and layer): the bytes
    the protobuf library makes of the same ``Event``, tested, at a fraction of its cost.
    """
    e = np.asarray(edges if hasattr(edges, "__len__") else list(edges), dtype=np.float64)
    c = counts if hasattr(counts, "__len__") else list(counts)
    if e.ndim != 1 or len(e) != len(c) + 1:
        raise ValueError(f"histogram {tag!r}: expected {len(c) + 1} edges, got {len(e)}")
    table = np.empty((len(c), 3), dtype="<f8")  # rows (left edge, right edge, count)
    table[:, 0] = e[:-1]
    table[:, 1] = e[1:]
    table[:, 2] = c
    content = table.tobytes()
    dims = b"\x12" + _field(b"\x08" + _varint(len(c))) + b"\x12\x02\x08\x03"  # dims: bins, 3
    tensor = b"\x08\x02" + b"\x12" + _field(dims) + b"\x22" + _field(content)  # DT_DOUBLE
    head = _HISTOGRAM_TAGS.get(tag)
    if head is None:
        raw = tag.encode("utf-8")
        head = _HISTOGRAM_TAGS[tag] = b"\x0a" + _field(raw)
    value = head + b"\x42" + _field(tensor) + _HISTOGRAM_METADATA
    summary = b"\x0a" + _field(value)
    step = int(step)
    step_field = b"\x10" + _varint(step & 0xFFFFFFFFFFFFFFFF) if step else b""  # 0: omitted
    return b"".join((b"\x09", _DOUBLE.pack(wall), step_field, b"\x2a", _field(summary)))


def _field(data: bytes) -> bytes:
    """A length-delimited field's length and bytes."""
    n = len(data)
    return (_SMALL_VARINTS[n] if n < 128 else _varint(n)) + data


_HISTOGRAM_TAGS: dict[str, bytes] = {}  # tag -> its encoded tag field
# metadata { plugin_data { plugin_name: "histograms" } }
_HISTOGRAM_METADATA = b"\x4a" + _field(b"\x0a" + _field(b"\x0a" + _field(b"histograms")))


def scalars_event(
    step: int, values: Mapping[str, float], wall: float, described: set[str]
) -> bytes:
    """The serialized ``Event`` :meth:`Recorder.scalars` writes (no TensorFlow needed).

    ``described``: the tags that already carried their metadata; updated here.
    """
    parts = []
    for tag, v in values.items():
        prefix = _PREFIXES.get(tag)
        if prefix is not None and tag in described:
            try:
                parts += (prefix, _FLOAT.pack(v))
                continue
            except (OverflowError, TypeError, struct.error):
                pass  # beyond float32, or not a float: the general way below
        known = tag in described
        if not known:
            described.add(tag)
        value = _scalar_value(tag, float(v), known)
        parts += (b"\x0a", _varint(len(value)), value)
    out = b"".join(parts)
    step = int(step)
    step_bytes = _SMALL_VARINTS[step] if 0 <= step < 128 else _varint(step & 0xFFFFFFFFFFFFFFFF)
    return b"".join(
        (b"\x09", _DOUBLE.pack(wall), b"\x10", step_bytes, b"\x2a", _varint(len(out)), out)
    )


def scalar_records(
    steps: np.ndarray,
    walls: np.ndarray,
    columns: Mapping[str, np.ndarray],
    described: set[str],
    absent: Mapping[str, np.ndarray] | None = None,
) -> list[bytes]:
    """The records :func:`scalars_event` writes for each row of a block of steps, at once.

    Row ``i`` is the event at ``steps[i]``, ``walls[i]`` with ``columns[tag][i]`` per
    tag (tags whose ``absent`` mask is set at ``i`` left out), byte for byte what
    :func:`scalars_event` makes of it (a row with no value: no record). ``described``
    is updated. The records of :func:`scalar_blocks`, in row order.
    """
    return records_in_order(scalar_blocks(steps, walls, columns, described, absent))


def records_in_order(blocks: list[tuple[np.ndarray, Any]]) -> list[bytes]:
    """The records of :func:`scalar_blocks`' blocks, one by one, in row order."""
    n = max((int(at.max()) + 1 for at, _ in blocks if len(at)), default=0)
    out: list[bytes | None] = [None] * n
    for at, rows in blocks:
        if isinstance(rows, list):
            for i, record in zip(at.tolist(), rows, strict=True):
                out[i] = record
            continue
        raw, width = rows.tobytes(), rows.shape[1]
        for j, i in enumerate(at.tolist()):
            out[i] = raw[j * width : (j + 1) * width]
    return [r for r in out if r is not None]


def scalar_blocks(
    steps: np.ndarray,
    walls: np.ndarray,
    columns: Mapping[str, np.ndarray],
    described: set[str],
    absent: Mapping[str, np.ndarray] | None = None,
) -> list[tuple[np.ndarray, Any]]:
    """:func:`scalar_records`' records as ``(rows, records)`` blocks (``write_blocks``).

    A block is the records of some rows: of one length, as a uint8 matrix (a record a
    row: rows with the same tags present and a step number of the same length, encoded
    with numpy, a few hundred nanoseconds each however many there are), or, for the
    rows encoded one by one (a tag's first value, patterns of a few rows), a list.
    """
    n = len(steps)
    tags = list(columns)
    absent = absent or {}
    blocks: list[tuple[np.ndarray, Any]] = []
    singles: dict[int, bytes] = {}  # rows encoded one by one: a block of their own

    def one(i: int, present: Iterable[str]) -> None:
        values = {t: float(columns[t][i]) for t in present}
        singles[i] = scalars_event(int(steps[i]), values, float(walls[i]), described)

    dense = np.ones(n, dtype=bool)  # rows left for the block-wise encoding below
    for tag in tags:
        if tag not in described and n:
            # a tag's first value carries its metadata: that row the one-by-one way
            mask = absent.get(tag)
            present = np.nonzero(~mask)[0] if mask is not None else (0,)
            if len(present):
                dense[present[0]] = False
    for i in np.nonzero(~dense)[0].tolist():
        one(i, [t for t in tags if t not in absent or not absent[t][i]])
    for present, rows in _patterns(n, tags, absent, dense):
        if not present:
            continue  # a row with no value at all: no record (as Recorder.scalars)
        if len(rows) < SMALL_BLOCK:  # numpy's fixed cost per call outweighs a few rows' Python
            for i in rows.tolist():
                one(i, present)
        else:
            for tag in present:
                described.add(tag)
            blocks += _dense_blocks(steps, walls, columns, present, rows)
    if singles:
        blocks.append((np.fromiter(singles, dtype=np.int64), list(singles.values())))
    return blocks


def _patterns(
    n: int, tags: list[str], absent: Mapping[str, np.ndarray], todo: np.ndarray
) -> list[tuple[list[str], np.ndarray]]:
    """The rows of ``todo`` grouped by which tags they have: ``(tags present, rows)``.

    A custom loop's gradient norm is measured every tenth step: its block has two
    patterns (loss alone, loss and norm), each encoded at once, not row by row.
    """
    masked = [t for t in tags if t in absent]
    rows = np.nonzero(todo)[0]  # rows not done already (a tag's first value)
    if not masked or not len(rows):
        return [(tags, rows)]
    if len(masked) <= 62:  # each row's pattern as the bits of one integer (the quick way)
        code = np.zeros(len(rows), dtype=np.int64)
        for bit, tag in enumerate(masked):
            code |= absent[tag][rows].astype(np.int64) << bit
        codes, which = np.unique(code, return_inverse=True)
        kinds = [[value >> bit & 1 for bit in range(len(masked))] for value in codes.tolist()]
    else:  # more sporadic tags than bits: the rows of the absence table, compared whole
        table = np.stack([absent[t][rows] for t in masked], axis=1)
        found, which = np.unique(table, axis=0, return_inverse=True)
        kinds = found.tolist()
    which = which.reshape(-1)
    out = []
    for k, kind in enumerate(kinds):
        gone = {t for t, off in zip(masked, kind, strict=True) if off}
        out.append(([t for t in tags if t not in gone], rows[which == k]))
    return out


def _dense_blocks(
    steps: np.ndarray,
    walls: np.ndarray,
    columns: Mapping[str, np.ndarray],
    tags: list[str],
    rows: np.ndarray,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The records of ``rows`` (every tag present and described), built with numpy: a
    ``(rows, records)`` block per length of the step's varint."""
    u8 = np.uint8
    prefixes = []
    for tag in tags:
        head = _TAGS.get(tag)
        if head is None:
            raw = tag.encode("utf-8")
            head = _TAGS[tag] = b"\x0a" + _varint(len(raw)) + raw
        value_len = len(head) + 10  # + the float32 tensor: 42 08 08 01 2a 04 <f32>
        prefixes.append(b"\x0a" + _varint(value_len) + head + b"\x42\x08\x08\x01\x2a\x04")
    summary_len = sum(len(p) + 4 for p in prefixes)
    summary_head = b"\x2a" + _varint(summary_len)
    step_u = steps[rows].astype(np.int64).view(np.uint64)
    lengths = np.ones(len(rows), dtype=np.int64)
    for k in range(1, 10):
        lengths += step_u >= np.uint64(1 << (7 * k))
    with np.errstate(over="ignore", invalid="ignore"):
        f32 = [np.asarray(columns[t], dtype=np.float64)[rows].astype("<f4") for t in tags]
    wall64 = np.asarray(walls, dtype="<f8")[rows]
    low, high = int(lengths.min()), int(lengths.max())  # (np.unique costs ~0.3 ms)
    out = []
    for length in range(low, high + 1):
        pick = np.nonzero(lengths == length)[0] if low != high else np.arange(len(rows))
        if not len(pick):
            continue
        width = 10 + length + len(summary_head) + summary_len
        buf = np.empty((len(pick), width), dtype=u8)
        buf[:, 0] = 0x09
        buf[:, 1:9] = wall64[pick].view(u8).reshape(-1, 8)
        buf[:, 9] = 0x10
        s = step_u[pick]
        for k in range(length):
            byte = (s >> np.uint64(7 * k)) & np.uint64(0x7F)
            if k < length - 1:
                byte |= np.uint64(0x80)
            buf[:, 10 + k] = byte.astype(u8)
        pos = 10 + length
        buf[:, pos : pos + len(summary_head)] = np.frombuffer(summary_head, u8)
        pos += len(summary_head)
        for prefix, col in zip(prefixes, f32, strict=True):
            buf[:, pos : pos + len(prefix)] = np.frombuffer(prefix, u8)
            pos += len(prefix)
            buf[:, pos : pos + 4] = col[pick].view(u8).reshape(-1, 4)
            pos += 4
        out.append((rows[pick], buf))
    return out


def _scalar_value(tag: str, v: float, described: bool) -> bytes:
    """A ``Summary.Value``: tag, float32 tensor (dtype 1, float_val [v]), maybe metadata."""
    head = _TAGS.get(tag)
    if head is None:
        raw = tag.encode("utf-8")
        head = _TAGS[tag] = b"\x0a" + _varint(len(raw)) + raw
        # a described value: Summary.value's key and length, the tag, the tensor up to v
        _PREFIXES[tag] = b"\x0a" + _varint(len(head) + 10) + head + b"\x42\x08\x08\x01\x2a\x04"
    # tensor (field 8): dtype=DT_FLOAT (field 1), float_val packed (field 5), shape []
    try:
        packed = _FLOAT.pack(v)
    except OverflowError:  # beyond float32: infinite, as a float32 tensor holds it
        packed = _FLOAT.pack(math.copysign(math.inf, v))
    tensor = b"\x42\x08\x08\x01\x2a\x04" + packed
    return head + tensor if described else head + tensor + _SCALARS_METADATA


# -- one writer per kind of event -------------------------------------------
def _run_started(rec: Recorder, e: RunStarted) -> None:
    rec.info.update(script=e.script, argv=list(e.argv), cwd=e.cwd, start_time=e.wall_time)
    rec._t0_wall = e.wall_time


def _run_devices(rec: Recorder, e: RunDevices) -> None:
    rec.info["devices"] = list(e.devices)


def _fit_started(rec: Recorder, e: FitStarted) -> None:
    rec.info["segments"].append(
        {
            "kind": "fit",
            "index": e.fit_index,
            "model": e.model.name,
            "class": e.model.class_name,
            "params": e.model.total_params,
            "epochs": e.epochs,
            "initial_epoch": e.initial_epoch,
            "steps_per_epoch": e.steps_per_epoch,
            "steps_per_execution": e.steps_per_execution,
            "start_step": e.global_step,
            "start_time": e.time,
            **({"loop": e.loop_index} if e.kind == "loop" else {}),  # a custom training loop
        }
    )


def _model_built(rec: Recorder, e: ModelBuilt) -> None:
    for seg in reversed(rec.info["segments"]):  # its fit's count, 0 at the fit's start
        if seg.get("kind") == "fit" and seg.get("index") == e.fit_index:
            seg["params"] = e.total_params
            break


def _fit_ended(rec: Recorder, e: FitEnded) -> None:
    for seg in reversed(rec.info["segments"]):
        if seg.get("kind") == "fit" and seg.get("index") == e.fit_index:
            seg.update(end_step=e.global_step, end_time=e.time, stopped=e.stopped)
            break


def _step_ended(rec: Recorder, e: StepEnded) -> None:
    values = {STEP_PREFIX + k: v for k, v in e.values.items()}
    for k, v in e.running.items():
        if k not in e.values:  # drawn where the metric has no value of its own
            values[RUNNING_PREFIX + k] = v
    if values:
        rec.scalars(e.global_step, values, rec._wall(e.time))
    rec.info["steps"] = e.global_step
    loss = e.values.get("loss")
    if loss is not None and math.isfinite(loss):
        rec.info["final_loss"] = loss


def _step_columns(rec: Recorder, e: StepColumns) -> None:
    """A block of steps: one record per step, encoded at once (the hot path of recording)."""
    if not len(e):
        return
    walls = rec._t0_wall + np.asarray(e.time, dtype=np.float64)  # (_last_wall: see write)
    columns = {STEP_PREFIX + k: v for k, v in e.values.items()}
    absent = {STEP_PREFIX + k: m for k, m in e.absent.items()}
    for k, col in e.running.items():
        if k not in e.values:  # a metric with no value of its own (AUC): its running mean
            columns[RUNNING_PREFIX + k] = col
            if k in e.running_absent:
                absent[RUNNING_PREFIX + k] = e.running_absent[k]
    if columns:
        rec._writer.write_blocks(
            scalar_blocks(e.global_step, walls, columns, rec._described, absent)
        )
    rec.info["steps"] = int(e.global_step[-1])
    if "loss" in e.values:
        steps, losses = e.column("loss")
        finite = np.nonzero(np.isfinite(losses))[0]
        if len(finite):
            rec.info["final_loss"] = float(losses[finite[-1]])


def _epoch_ended(rec: Recorder, e: EpochEnded) -> None:
    values = {EPOCH_PREFIX + k: v for k, v in e.metrics.items() if not math.isnan(v)}
    if values:
        rec.scalars(e.global_step, values, rec._wall(e.time))
    rec.info["epochs"] = e.epoch + 1


def _restored(rec: Recorder, e: CheckpointRestored) -> None:
    """run.json keeps each restore: a reader drops what was recorded after its step before it."""
    rec.info.setdefault("restores", []).append(
        {"step": e.step, "path": e.path, "time": e.time, "wall": rec._wall(e.time)}
    )


def _learning_rate(rec: Recorder, e: LearningRate) -> None:
    rec.scalars(e.global_step, {"learning_rate": e.value}, rec._now_wall())


def _run_ended(rec: Recorder, e: RunEnded) -> None:
    rec.info.update(
        status=e.status,
        exit_code=e.exit_code,
        end_time=rec._wall(e.time) if e.time else time.time(),
        duration=e.time,
        steps=e.global_step,
        message=e.message,
    )
    if e.error is not None:
        rec.info["error"] = {
            "type": e.error.type_name,
            "message": e.error.message,
            "where": e.error.location(),
        }


def _edges(lo: float, hi: float, bins: int) -> np.ndarray:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        hi = lo + 1e-12 if math.isfinite(lo) else 1.0
        lo = lo if math.isfinite(lo) else 0.0
    return lo + (hi - lo) * np.arange(bins + 1, dtype=np.float64) / bins  # lo + (hi-lo)*i/bins


def _weight_stats(rec: Recorder, e: WeightStats) -> None:
    values: dict[str, float] = {}
    shapes = rec.info.setdefault("variables", {})  # run.json: each variable's shape
    for v in e.variables:
        for name in ("mean", "std", "min", "max", "norm", "zero_fraction"):
            values[f"weights/{v.path}/{name}"] = getattr(v, name)
        for j, value in enumerate(v.values):  # small variables (W, b): the values themselves
            values[f"weights/{v.path}/values/{j}"] = value
        if v.path not in shapes:
            shapes[v.path] = list(v.shape)
        if v.hist:
            rec.histogram(
                f"weights/{v.path}",
                e.step,
                _edges(v.min, v.max, len(v.hist)),
                v.hist,
                rec._now_wall(),
            )
    rec.scalars(e.step, values, rec._now_wall())


def _gradient_stats(rec: Recorder, e: GradientStats) -> None:
    values = {"gradients/global_norm": e.global_norm}
    for v in e.variables:
        values[f"gradients/{v.path}/norm"] = v.norm
        if v.hist:
            rec.histogram(
                f"gradients/{v.path}",
                e.step,
                _edges(v.min, v.max, len(v.hist)),
                v.hist,
                rec._now_wall(),
            )
    rec.scalars(e.step, values, rec._now_wall())


def _layer_outputs(rec: Recorder, e: LayerOutputs) -> None:
    values: dict[str, float] = {}
    for layer in e.layers:
        for name in ("mean", "std", "zero_fraction", "dead_fraction"):
            values[f"outputs/{layer.path}/{name}"] = getattr(layer, name)
        if layer.hist:
            edges = _edges(layer.min, layer.max, len(layer.hist))
            rec.histogram(f"outputs/{layer.path}", e.step, edges, layer.hist, rec._now_wall())
    rec.scalars(e.step, values, rec._now_wall())


WRITERS: dict[type, Callable[[Recorder, Any], None]] = {
    RunStarted: _run_started,
    RunDevices: _run_devices,
    FitStarted: _fit_started,
    ModelBuilt: _model_built,
    FitEnded: _fit_ended,
    StepEnded: _step_ended,
    StepColumns: _step_columns,
    EpochEnded: _epoch_ended,
    LearningRate: _learning_rate,
    CheckpointRestored: _restored,
    WeightStats: _weight_stats,
    GradientStats: _gradient_stats,
    LayerOutputs: _layer_outputs,
    RunEnded: _run_ended,
}
"""Event type -> function recording it. A new kind of event is one entry here."""

# Events recorded in tags of their own, dated by wall time (readers split a run at a
# restore by each tag's wall times, not by file order): the steps waiting to be encoded
# need not go first. An epoch's end, the learning rate's points and the inspector's
# samples come every few beats; encoding the steps before each of them made blocks of a
# few dozen rows, whose numpy set-up cost more than the rows.
_BESIDE_STEPS = frozenset({EpochEnded, LearningRate, WeightStats, GradientStats, LayerOutputs})


# -- recording a session: the recorder is a sink of the run's pump -------------------
class PumpRecording:
    """A run's :class:`Recorder` as one of the sinks of the run's pump (``core/pump.py``).

    The pump already drains the run's channel every 50 ms for the viewer; it hands
    the same batches to the recorder, on its own thread, so the training thread does
    nothing more for recording.
    """

    def __init__(self, recorder: Recorder, pump: Pump) -> None:
        self.recorder = recorder
        self.pump = pump
        pump.add_sink(recorder)

    def close(self, ended: RunEnded | None) -> None:
        """Write what is pending, leave the pump and close the recorder."""
        self.pump.detach_sink(self.recorder)
        self.recorder.close(ended)


def recording_failed_note(run_dir: Any, text: str) -> str:
    """The one note a run gets when its record can no longer be written."""
    why = "the disk is full" if is_disk_full(text) else f"writing failed: {text}"
    return (
        f"Recording stopped: {why}. Training goes on; what was recorded before stays "
        f"readable in {run_dir}, later steps are not recorded."
    )


def is_disk_full(error: BaseException | str) -> bool:
    """True when ``error`` says the file system ran out of space (or of quota)."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(error)
    return "No space left on device" in text or "ENOSPC" in text or "Disk quota" in text


def start_recording(session: Any, started: RunStarted) -> PumpRecording | None:
    """Start recording a :class:`TrainingSession` on its pump (None when not recording).

    ``session.run_dir`` / ``monitor.run_dir`` then name the run folder (checkpoints go there).
    """
    monitor = session.monitor
    if not monitor.options.record:
        return None
    try:
        logdir = resolve_logdir(monitor.options.logdir, started.cwd)
        recorder = Recorder.for_script(logdir, started.script)
        recorder.write([started])
    except Exception as exc:  # noqa: BLE001 - a run goes on unrecorded
        monitor.report_error("recorder", exc)
        return None
    session.run_dir = monitor.run_dir = recorder.run_dir
    recorder.on_error = lambda text: monitor.note(recording_failed_note(recorder.run_dir, text))
    recording = PumpRecording(recorder, session.pump)
    monitor.channel.emit(RunRecording(str(recorder.run_dir)))
    return recording
