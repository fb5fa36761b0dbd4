"""What a run folder holds besides its metrics: console output, checkpoints, notices, system.

A recorded run's folder (``engine/recorder.py`` writes it) holds, beside the
TensorBoard event files and ``run.json``:

- ``output.log``: the console text as the user saw it (stdout and stderr interleaved,
  ``tf.print`` and TensorFlow's C++ lines, tfstudio's own notes), written by the
  viewer's side of the run (``core/output_log.py``); bounded: the first
  :data:`~tfstudio.core.output_log.HEAD_CHARS` and the last
  :data:`~tfstudio.core.output_log.TAIL_CHARS` characters, with one line saying how
  much was left out between them.
- ``events.jsonl``: the checkpoints saved, restored, deleted or refused and the
  notices (advisor findings, NaN notes, tfstudio's notices and monitoring errors), one
  JSON object a line, appended as they happen (a killed run leaves every line
  written before; a torn last line is skipped).
- ``system/...`` scalars in the event file: the 1 Hz samples of the run's processes,
  the machine and its GPUs (:class:`~tfstudio.core.events.SystemSampled`).

:func:`read_run_record` reads all of that back; :func:`event_line` and
:func:`event_from_json` are the line format, shared by the writer and the reader.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfstudio.core import events as _events
from tfstudio.core.eventfile_decode import TagColumns
from tfstudio.core.events import (
    Advice,
    CheckpointDeleted,
    CheckpointList,
    CheckpointRefused,
    CheckpointRestored,
    CheckpointSaved,
    MonitorError,
    NonFinite,
    Notice,
)
from tfstudio.core.locations import Location, fs_for, location
from tfstudio.core.output_log import OUTPUT_LOG

EVENTS_LOG = "events.jsonl"
SYSTEM_PREFIX = "system/"

NOTICE_EVENTS: tuple[type, ...] = (Notice, Advice, NonFinite, MonitorError)
CHECKPOINT_EVENTS: tuple[type, ...] = (
    CheckpointSaved,
    CheckpointRestored,
    CheckpointDeleted,
    CheckpointRefused,
    CheckpointList,
)
LOGGED_EVENTS: tuple[type, ...] = NOTICE_EVENTS + CHECKPOINT_EVENTS
"""The kinds of event ``events.jsonl`` keeps, in the order they happened."""

_BY_NAME: dict[str, type] = {cls.__name__: cls for cls in LOGGED_EVENTS}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"type": type(value).__name__, **_fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # "nan", "inf", "-inf": JSON has no such numbers
    return value


def _fields(event: Any) -> dict[str, Any]:
    return {f.name: _plain(getattr(event, f.name)) for f in dataclasses.fields(event) if f.init}


def event_line(event: object, wall: float) -> str:
    """One line of ``events.jsonl``: ``{"type": ..., "wall": ..., <the event's fields>}``."""
    return json.dumps({"type": type(event).__name__, "wall": wall, **_fields(event)}) + "\n"


def _restore(value: Any, hint: Any) -> Any:
    if isinstance(value, dict) and value.get("type") in _BY_NAME:
        return event_from_json(value)
    if isinstance(value, list):
        return tuple(_restore(v, None) for v in value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf") and isinstance(hint, float):
        return float(value)
    return value


def event_from_json(obj: dict[str, Any]) -> object | None:
    """The event one line of ``events.jsonl`` holds (None: not a kind this reader knows)."""
    cls = _BY_NAME.get(str(obj.get("type")))
    if cls is None or getattr(_events, cls.__name__, None) is not cls:
        return None
    kwargs = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name not in obj:
            continue
        kwargs[f.name] = _restore(obj[f.name], 0.0 if "float" in str(f.type) else None)
    try:
        return cls(**kwargs)
    except TypeError:
        return None


@dataclass
class RunRecord:
    """Everything a run folder holds besides its metrics and inspector samples.

    Attributes:
        console: the console text as the user saw it ("" when the folder has none).
        notices: :data:`NOTICE_EVENTS` in the order they came (``Notice``, ``Advice``,
            ``NonFinite``, ``MonitorError``).
        checkpoints: the checkpoints saved and not deleted since, in the order saved.
        checkpoint_events: every checkpoint event in order (saved, restored, deleted,
            refused, listed), to replay as a live run's were.
        events: every event ``events.jsonl`` holds, in order.
        event_walls: ``time.time()`` when each of :attr:`events` was recorded.
        system: ``system/...`` tag -> (seconds since the run started, values).
        problems: what could not be read, in words (a torn line, an unreadable file).
    """

    console: str = ""
    notices: list[object] = field(default_factory=list)
    checkpoints: list[CheckpointSaved] = field(default_factory=list)
    checkpoint_events: list[object] = field(default_factory=list)
    events: list[object] = field(default_factory=list)
    event_walls: list[float] = field(default_factory=list)
    system: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_events_log(path: Location) -> tuple[list[object], list[float], list[str]]:
    """``events.jsonl``'s events, their wall times and what could not be read."""
    try:
        raw = fs_for(path).read_bytes(path)  # type: ignore[arg-type]
    except FileNotFoundError:
        return [], [], []
    except OSError as exc:
        return [], [], [f"{path}: {exc}"]
    out, walls, problems = [], [], []
    lines = raw.split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            last = n == len(lines) or (n == len(lines) - 1 and not lines[-1])
            why = "its last line was cut short (the run ended mid-write)" if last else "bad JSON"
            problems.append(f"{path}, line {n}: {why}; skipped")
            continue
        event = event_from_json(obj) if isinstance(obj, dict) else None
        if event is None:
            continue  # a kind this version does not know
        out.append(event)
        walls.append(float(obj.get("wall") or 0.0))
    return out, walls, problems


def read_system(
    run_dir: Location, start_time: float, columns: Mapping[str, TagColumns] | None = None
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The ``system/...`` scalars of a run folder: tag -> (seconds since start, values).

    ``columns``: the folder's scalars when read already (a reader that follows the
    folder); None: its event files are read here.
    """
    from tfstudio.core.run_reading import read_columns

    out = {}
    for tag, cols in (read_columns(run_dir) if columns is None else columns).items():
        if tag.startswith(SYSTEM_PREFIX) and len(cols):
            order = np.argsort(cols.wall, kind="stable")
            out[tag] = (cols.wall[order] - start_time, cols.values[order])
    return out


def read_run_record(
    run_dir: str | Path | Location, columns: Mapping[str, TagColumns] | None = None
) -> RunRecord:
    """Read a run folder's console text, checkpoints, notices and system samples.

    Never raises for a damaged or partial folder (a run killed mid-write): what can be
    read is returned and the rest is named in :attr:`RunRecord.problems`. ``columns``:
    the folder's scalars when read already (see :func:`read_system`).
    """
    from tfstudio.core.runs import read_run_json

    folder = location(run_dir)
    record = RunRecord()
    log = folder / OUTPUT_LOG
    try:
        record.console = fs_for(log).read_bytes(log).decode("utf-8", errors="replace")  # type: ignore[arg-type]
    except FileNotFoundError:
        pass
    except OSError as exc:
        record.problems.append(f"{log}: {exc}")
    events, walls, problems = read_events_log(folder / EVENTS_LOG)
    record.events, record.event_walls = events, walls
    record.problems += problems
    saved: dict[str, CheckpointSaved] = {}
    for event in events:
        if isinstance(event, NOTICE_EVENTS):
            record.notices.append(event)
        elif isinstance(event, CHECKPOINT_EVENTS):
            record.checkpoint_events.append(event)
            if isinstance(event, CheckpointSaved):
                saved[event.path] = event
            elif isinstance(event, CheckpointList):
                for entry in event.entries:
                    saved.setdefault(entry.path, entry)
            elif isinstance(event, CheckpointDeleted):
                saved.pop(event.path, None)
    record.checkpoints = list(saved.values())
    try:
        info = read_run_json(folder)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a folder without run.json: times from its first point
        info = {}
    try:
        start = info.get("start_time")
        system = read_system(folder, 0.0, columns)
        if start is None and system:
            start = min(float(t[0]) for t, _ in system.values())
        record.system = {tag: (t - float(start or 0.0), v) for tag, (t, v) in system.items()}
    except Exception as exc:  # noqa: BLE001
        record.problems.append(f"{folder}: system samples unreadable: {exc}")
    return record
