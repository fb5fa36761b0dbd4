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

Adding a new kind of event is one function registered in
:data:`~tfstudio.engine.record_writers.WRITERS`; the protos are encoded in
``engine/summary_encoding.py``.

A run folder may be a URL (``gs://bucket/runs/...``): the event file, the folder and
``run.json`` are then written through ``tf.io.gfile`` (TensorFlow's file systems);
a local path is written with ``os`` as always.
"""

from __future__ import annotations

import copy
import errno
import itertools
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tfstudio.core.eventfile import RecordFileWriter
from tfstudio.core.events import Notice, RunEnded, RunRecording, RunStarted, StepColumns, join_steps
from tfstudio.core.locations import GFileFS, UrlPath, fs_for, location
from tfstudio.core.pump import Pump
from tfstudio.core.run_record import EVENTS_LOG, event_line
from tfstudio.core.runs import new_run_dir, resolve_logdir, write_run_json
from tfstudio.engine.hparams import record_session_end
from tfstudio.engine.record_writers import _BESIDE_STEPS, WRITERS, _edges, _run_ended, _step_columns
from tfstudio.engine.summary_encoding import (
    SMALL_BLOCK,
    histogram_event,
    records_in_order,
    scalar_blocks,
    scalar_records,
    scalars_event,
)

__all__ = [  # what other modules and tests take from here (the encoding lives apart)
    "FLUSH_EVERY_S",
    "SMALL_BLOCK",
    "WRITERS",
    "PumpRecording",
    "Recorder",
    "_edges",
    "histogram_event",
    "is_disk_full",
    "records_in_order",
    "recording_failed_note",
    "scalar_blocks",
    "scalar_records",
    "scalars_event",
    "start_recording",
    "tf_fs",
]

FLUSH_EVERY_S = 0.5  # a follower sees new points within ~1 s (flush + its poll)
# Steps wait (as columns) until the next flush, another kind of event or this many rows,
# then are encoded as one block: a few pump beats' worth at once, not a few rows a beat.
PENDING_ROWS = 4096
# A periodic flush rewrites run.json when only these changed at most this often (readers
# re-read a running run's run.json every RUN_JSON_EVERY_S = 2 s): a rewrite costs ~1 ms.
INFO_EVERY_S = 2.0
EVENTS_LOG_LINES = 10_000  # events.jsonl's bound (a run saves and notes far fewer)
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
        self._events_log = EventsLog(self.run_dir / EVENTS_LOG, self._fs)  # checkpoints, notices
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
            self._events_log.flush()
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
        record_session_end(self)  # the HParams session's end and status (engine/hparams.py)
        self.flush()
        try:
            self._writer.close()
        except Exception as exc:  # noqa: BLE001
            self._error(f"close: {exc!r}")
        self._events_log.close()
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

    def log_event(self, event: object) -> None:
        """Append ``event`` to the run's ``events.jsonl`` (checkpoints and notices)."""
        self._events_log.write(event_line(event, time.time()))

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


class EventsLog:
    """``events.jsonl``: one JSON line per checkpoint event and notice, appended as each
    comes, so a run killed at any moment leaves every line written before (a torn last
    line is skipped by the reader). Bounded: after :data:`EVENTS_LOG_LINES` lines one
    last line says the rest was not recorded. A URL folder's file is rewritten whole at
    each flush that has new lines (object stores do not append).
    """

    def __init__(self, path: Path | UrlPath, fs: GFileFS | None) -> None:
        self.path = path
        self._fs = fs
        self._file: Any = None
        self._lines: list[str] = []  # (a URL's: all of them; kept to rewrite the file)
        self._dirty = False
        self.count = 0

    def write(self, line: str) -> None:
        """Append one line (raises OSError when the disk is full: the recorder notes it)."""
        if self.count > EVENTS_LOG_LINES:
            return
        self.count += 1
        if self.count > EVENTS_LOG_LINES:
            note = Notice(
                "tfstudio",
                f"{EVENTS_LOG} holds {EVENTS_LOG_LINES} lines at most: later checkpoints "
                "and notices are not recorded",
            )
            line = event_line(note, time.time())
        if isinstance(self.path, UrlPath):
            self._lines.append(line)
            self._dirty = True
            return
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        self._file.write(line)
        self._file.flush()  # in the kernel now: a killed process loses nothing

    def flush(self) -> None:
        """A URL's file rewritten with every line so far, if there are new ones."""
        if self._dirty:
            self._dirty = False
            fs_for(self.path, self._fs).write_bytes(self.path, "".join(self._lines).encode())  # type: ignore[arg-type]

    def close(self) -> None:
        """Flush and close (never raises: what could not be written stays unwritten)."""
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - already noted when writing failed
            pass
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None


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
