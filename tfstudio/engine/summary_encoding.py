"""TensorBoard summary protos encoded by hand: the bytes of a run's event records.

The recorder (``engine/recorder.py``) writes one ``Event`` per training step holding
all of that step's scalars, and the inspector's histograms. Encoding them with the
protobuf library costs ~3x what these functions do; the bytes are the same (tested
against ``event_pb2``). Needs no TensorFlow: tests and benchmarks write event files
with these too.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

SMALL_BLOCK = 24  # fewer rows than this are encoded one by one (cheaper than numpy's set-up)

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
