"""A run's hyperparameters: a flat ``name -> str | int | float | bool`` dict.

Written by the recorder to ``run.json["hparams"]`` and, as TensorBoard's HParams
plugin data (``_hparams_/session_start_info`` and ``_hparams_/session_end_info``), to
the run's event file, so TensorBoard's HParams dashboard lists tfstudio runs.
:func:`read_hparams` reads them back from any run folder: ``run.json`` first, else
the HParams plugin data of a TensorBoard folder (e.g. one written by TensorFlow's
``tensorboard.plugins.hparams.api.hparams({...})``).

Only TensorBoard's protobuf classes are used here (no TensorFlow, no Qt).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tfstudio.core.locations import Location, UrlPath, fs_for, location

HParamValue = str | int | float | bool
HParams = dict[str, HParamValue]

PLUGIN_NAME = "hparams"
SESSION_START_TAG = "_hparams_/session_start_info"
SESSION_END_TAG = "_hparams_/session_end_info"
_START_MARK = SESSION_START_TAG.encode("ascii")

# tfstudio's run status -> TensorBoard's hparams api Status (api.proto): SUCCESS 1,
# FAILURE 2, UNKNOWN 0. TensorBoard has no "stopped by the user": such a run is UNKNOWN.
_STATUS = {"finished": 1, "failed": 2, "interrupted": 2, "stopped": 0}


# -- values ---------------------------------------------------------------------
def plain_value(value: object) -> HParamValue | None:
    """``value`` as a plain ``str``/``int``/``float``/``bool`` (None: leave it out).

    numpy scalars become Python scalars, anything else its ``str``.
    """
    if value is None:
        return None
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    item = getattr(value, "item", None)  # numpy scalars (no numpy import needed)
    if callable(item) and getattr(value, "shape", None) == ():
        try:
            return plain_value(item())
        except (TypeError, ValueError):
            pass
    return str(value)


def clean(values: Mapping[str, object]) -> HParams:
    """A flat dict of plain values: keys as ``str``, None values dropped."""
    out: HParams = {}
    for key, value in values.items():
        v = plain_value(value)
        if v is not None:
            out[str(key)] = v
    return out


# -- TensorBoard's HParams plugin data --------------------------------------------
def group_name(values: Mapping[str, HParamValue]) -> str:
    """The session group TensorBoard's ``hp.hparams`` would give these values (a hash)."""
    text = json.dumps(dict(values), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plugin_event(tag: str, plugin_data: Any, wall_time: float) -> bytes:
    """A serialized ``Event`` holding ``plugin_data`` as the summary metadata of ``tag``
    at step 0, as ``tensorboard.plugins.hparams.summary_v2`` writes it."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import metadata

    summary = summary_pb2.Summary()
    summary.value.add(
        tag=tag,
        metadata=metadata.create_summary_metadata(plugin_data),
        tensor=metadata.NULL_TENSOR,
    )
    return event_pb2.Event(wall_time=wall_time, step=0, summary=summary).SerializeToString()


def session_start_event(
    values: Mapping[str, HParamValue], start_time: float, wall_time: float
) -> bytes:
    """The ``_hparams_/session_start_info`` record of a run (a serialized ``Event``).

    Args:
        values: the run's hyperparameters (plain values; see :func:`clean`).
        start_time: when the run started (seconds since the epoch).
        wall_time: the record's own time.
    """
    from tensorboard.plugins.hparams import plugin_data_pb2

    values = clean(values)
    info = plugin_data_pb2.SessionStartInfo(
        group_name=group_name(values), start_time_secs=start_time
    )
    for name in sorted(values):
        value = values[name]
        if isinstance(value, bool):
            info.hparams[name].bool_value = value
        elif isinstance(value, int | float):
            info.hparams[name].number_value = float(value)
        else:
            info.hparams[name].string_value = value
    data = plugin_data_pb2.HParamsPluginData(session_start_info=info)
    return _plugin_event(SESSION_START_TAG, data, wall_time)


def session_end_event(status: str, end_time: float) -> bytes:
    """The ``_hparams_/session_end_info`` record of a run that ended with ``status``
    (tfstudio's: ``finished``, ``failed``, ``stopped``, ``interrupted``)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    info = plugin_data_pb2.SessionEndInfo(status=_STATUS.get(status, 0), end_time_secs=end_time)
    data = plugin_data_pb2.HParamsPluginData(session_end_info=info)
    return _plugin_event(SESSION_END_TAG, data, end_time)


def start_info_values(content: bytes) -> HParams | None:
    """The hyperparameters in a ``session_start_info`` summary's plugin content (None:
    the content is not a session start)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    data = plugin_data_pb2.HParamsPluginData()
    try:
        data.ParseFromString(content)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        return None
    if data.WhichOneof("data") != "session_start_info":
        return None
    out: HParams = {}
    for name, value in data.session_start_info.hparams.items():
        kind = value.WhichOneof("kind")
        if kind == "bool_value":
            out[name] = bool(value.bool_value)
        elif kind == "number_value":
            number = float(value.number_value)
            is_int = math.isfinite(number) and number.is_integer() and abs(number) < 2**53
            out[name] = int(number) if is_int else number
        elif kind == "string_value":
            out[name] = str(value.string_value)
    return out


# -- reading ------------------------------------------------------------------------
_HEADER = struct.Struct("<QI")


def _records(data: bytes, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, payload) of the TFRecord-framed records in ``data`` that start before
    ``end``; stops at a truncated record (a file being written)."""
    at = 0
    while at + 12 <= len(data) and at <= end:
        (length, _) = _HEADER.unpack_from(data, at)
        start = at + 12
        if start + length + 4 > len(data):
            return
        yield at, data[start : start + length]
        at = start + length + 4


def _file_hparams(data: bytes) -> HParams | None:
    """The first session start info in one event file's bytes (None: there is none)."""
    mark = data.find(_START_MARK)
    if mark < 0:  # the quick answer for the many files that have none
        return None
    from tensorboard.compat.proto import event_pb2

    for _, payload in _records(data, mark):
        if _START_MARK not in payload:
            continue
        event = event_pb2.Event()
        try:
            event.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - a damaged record: look on
            continue
        for value in event.summary.value:
            if value.tag != SESSION_START_TAG:
                continue
            plugin = value.metadata.plugin_data
            if plugin.plugin_name and plugin.plugin_name != PLUGIN_NAME:
                continue
            found = start_info_values(plugin.content)
            if found is not None:
                return found
    return None


_CACHE: dict[tuple[str, int, int], HParams | None] = {}  # (file, size, mtime) -> found


def _event_file_hparams(path: Location) -> HParams | None:
    stamp = None
    if isinstance(path, Path):
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (str(path), st.st_size, st.st_mtime_ns)
        if stamp in _CACHE:
            found = _CACHE[stamp]
            return dict(found) if found is not None else None
    try:
        data = fs_for(path).read_bytes(path)  # type: ignore[arg-type]
    except OSError:
        return None
    found = _file_hparams(data)
    if stamp is not None:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        _CACHE[stamp] = found
    return dict(found) if found is not None else None


def _folder_hparams(folder: Location) -> HParams | None:
    from tfstudio.core.runs import event_files

    try:
        files = list(event_files(folder))
    except OSError:
        return None
    for path in files:
        found = _event_file_hparams(path)
        if found is not None:
            return found
    return None


def read_hparams(run_dir: str | os.PathLike[str] | UrlPath) -> HParams:
    """A run folder's hyperparameters as plain values; empty when it has none.

    ``run.json["hparams"]`` (a tfstudio run) first; else the first HParams session start
    in the folder's TensorBoard event files, then in those of its ``train/`` and
    ``validation/`` subfolders (Keras's TensorBoard callback layout). Never raises
    for a missing or damaged folder.
    """
    from tfstudio.core.runs import read_run_json

    folder = location(run_dir)
    try:
        info = read_run_json(folder)
    except OSError:
        info = {}
    recorded = info.get("hparams")
    if isinstance(recorded, dict) and recorded:
        return clean(recorded)
    found = _folder_hparams(folder)
    if found is None:
        for sub in ("train", "validation"):
            found = _folder_hparams(folder / sub)
            if found is not None:
                break
    return found or {}
