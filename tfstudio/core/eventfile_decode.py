"""Decoding event-file records: columns, framing, templates, summaries (no TensorFlow).

What :class:`~tfstudio.core.eventfile.EventFileReader` decodes with: the scalar
columns and histograms it returns, the framing of a buffer into blocks of records
of one length, the *templates* (where wall time, step and values sit in records of
one layout, decoded with numpy at fixed offsets), and the protobuf path for records
that fit no template.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfstudio.core.eventfile_writer import _FOOTER, _HEADER, masked_crc

_SCALAR_KINDS = ("scalars", "")


# -- columns -----------------------------------------------------------------------
@dataclass(slots=True)
class TagColumns:
    """One tag's scalar points as equal-length numpy columns: steps, values, wall times."""

    steps: np.ndarray  # int64
    values: np.ndarray  # float64
    wall: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.steps)

    @classmethod
    def empty(cls) -> TagColumns:
        """No points."""
        return cls(np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64))

    @classmethod
    def concat(cls, parts: Iterable[TagColumns]) -> TagColumns:
        """The points of ``parts``, one after another."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        return cls(
            np.concatenate([p.steps for p in parts]),
            np.concatenate([p.values for p in parts]),
            np.concatenate([p.wall for p in parts]),
        )


def merge_columns(
    into: dict[str, TagColumns], new: dict[str, TagColumns], prefix: str = ""
) -> None:
    """Append each tag's new points in ``new`` to ``into`` (tags prefixed with ``prefix``)."""
    for tag, cols in new.items():
        key = prefix + tag
        old = into.get(key)
        into[key] = cols if old is None else TagColumns.concat((old, cols))


@dataclass(frozen=True, slots=True)
class Histogram:
    """One histogram at one step: bucket edges (``len(counts) + 1``) and counts."""

    step: int
    wall: float
    edges: tuple[float, ...]
    counts: tuple[float, ...]


# -- templates ---------------------------------------------------------------------
def _uvarint(b: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(b) or shift > 63:
            raise ValueError("bad varint")
        byte = b[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


@dataclass(frozen=True, slots=True)
class _Template:
    """Where the variable fields sit in records of one layout."""

    wall: int
    step: int  # offset of the step varint, -1 when the step (0) is omitted
    step_width: int
    values: tuple[tuple[str, int, str], ...]  # (tag, offset, "<f4" | "<f8")
    described: tuple[str, ...]  # tags whose records carry the scalars plugin's metadata

    def variable_columns(self) -> np.ndarray:
        cols = list(range(self.wall, self.wall + 8))
        if self.step >= 0:
            cols += range(self.step, self.step + self.step_width)
        for _, off, fmt in self.values:
            cols += range(off, off + (4 if fmt == "<f4" else 8))
        return np.asarray(cols, dtype=np.intp)


def _plugin_name(metadata: bytes) -> str | None:
    from tensorboard.compat.proto import summary_pb2

    try:
        return summary_pb2.SummaryMetadata.FromString(metadata).plugin_data.plugin_name
    except Exception:  # noqa: BLE001 - a record that fits no template goes the slow way
        return None


def _tensor_slot(b: bytes, pos: int, end: int) -> tuple[int, str] | None:
    """Offset and format of a scalar float tensor's one value (None for anything else)."""
    dtype = 0
    slot: tuple[int, str] | None = None
    while pos < end:
        key, pos = _uvarint(b, pos)
        if key == 0x08:
            dtype, pos = _uvarint(b, pos)
        elif key == 0x12:  # tensor_shape: only a scalar's (no dims)
            n, pos = _uvarint(b, pos)
            if n:
                return None
        elif key in (0x22, 0x2A, 0x32):  # tensor_content, packed float_val, packed double_val
            n, pos = _uvarint(b, pos)
            want = 8 if key == 0x32 else 4 if key == 0x2A else n
            if n != want or n not in (4, 8) or slot is not None:
                return None
            slot = (pos, "<f4" if n == 4 else "<f8")
            pos += n
        elif key == 0x2D and slot is None:  # float_val, unpacked
            slot, pos = (pos, "<f4"), pos + 4
        elif key == 0x31 and slot is None:  # double_val, unpacked
            slot, pos = (pos, "<f8"), pos + 8
        else:
            return None
    if slot is None or pos != end:
        return None
    if (dtype, slot[1]) not in ((1, "<f4"), (2, "<f8")):
        return None
    return slot


def _value_slot(b: bytes, pos: int, end: int) -> tuple[str, int, str, bool] | None:
    """A ``Summary.Value`` holding one float: its tag, offset, format, and metadata flag."""
    tag: str | None = None
    slot: tuple[int, str] | None = None
    described = False
    while pos < end:
        key, pos = _uvarint(b, pos)
        if key == 0x0A:
            n, pos = _uvarint(b, pos)
            tag = b[pos : pos + n].decode("utf-8")
            pos += n
        elif key == 0x15 and slot is None:  # simple_value
            slot, pos = (pos, "<f4"), pos + 4
        elif key == 0x42 and slot is None:
            n, pos = _uvarint(b, pos)
            slot = _tensor_slot(b, pos, pos + n)
            if slot is None:
                return None
            pos += n
        elif key == 0x4A:
            n, pos = _uvarint(b, pos)
            if _plugin_name(b[pos : pos + n]) != "scalars":
                return None
            described = True
            pos += n
        else:
            return None
    if tag is None or slot is None or pos != end:
        return None
    return tag, slot[0], slot[1], described


def _template(event: bytes) -> _Template | None:
    """The layout of a scalars-only event, or None when it is anything else."""
    try:
        wall = step = -1
        width = 0
        values: list[tuple[str, int, str]] = []
        described: list[str] = []
        pos = 0
        while pos < len(event):
            key, pos = _uvarint(event, pos)
            if key == 0x09 and wall < 0:
                wall, pos = pos, pos + 8
            elif key == 0x10 and step < 0:
                start = pos
                _, pos = _uvarint(event, pos)
                step, width = start, pos - start
            elif key == 0x2A:
                n, pos = _uvarint(event, pos)
                end = pos + n
                while pos < end:
                    k, pos = _uvarint(event, pos)
                    if k != 0x0A:
                        return None
                    m, pos = _uvarint(event, pos)
                    slot = _value_slot(event, pos, pos + m)
                    if slot is None:
                        return None
                    values.append(slot[:3])
                    if slot[3]:
                        described.append(slot[0])
                    pos += m
                if pos != end:
                    return None
            else:
                return None
        if wall < 0 or not values or pos != len(event):
            return None
        return _Template(wall, step, width, tuple(values), tuple(described))
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _fixed_width(rows: np.ndarray, off: int, fmt: str) -> np.ndarray:
    width = 4 if fmt == "<f4" else 8
    return np.ascontiguousarray(rows[:, off : off + width]).view(fmt).ravel()


def _varints(rows: np.ndarray, off: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Decoded varints at a fixed offset and width, and which rows hold a well-formed one."""
    block = rows[:, off : off + width].astype(np.uint64)
    ok = np.ones(len(rows), dtype=bool)
    out = np.zeros(len(rows), dtype=np.uint64)
    for i in range(width):
        col = block[:, i]
        more = (col & np.uint64(0x80)) != 0
        ok &= more if i < width - 1 else ~more
        out |= (col & np.uint64(0x7F)) << np.uint64(7 * i)
    return out.view(np.int64), ok


def _next_record(raw: bytes) -> int | None:
    """Where the first whole record of ``raw`` begins (a read that starts mid-record)."""
    unpack = struct.unpack_from
    for p in range(max(0, len(raw) - _HEADER - _FOOTER)):
        if unpack("<I", raw, p + 8)[0] != masked_crc(raw[p : p + 8]):
            continue
        end = p + _HEADER + unpack("<Q", raw, p)[0]
        if end + _FOOTER <= len(raw) and unpack("<I", raw, end)[0] == masked_crc(
            raw[p + _HEADER : end]
        ):
            return p
    return None


_MAX_PERIOD = 8  # most layouts a writer cycles through (tf.summary: one per tag)


def _frame(raw: bytes, buf: np.ndarray) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    """The whole records of ``raw`` in blocks of one length, and where the rest begins.

    Each block is (start offsets, records as rows of bytes). Writers cycle through a
    few layouts (tfstudio's recorder: one; ``tf.summary``: one per tag, in turn), so
    the lengths of a stretch of records repeat with a short period: such stretches
    are checked with numpy and their blocks are views of ``raw``. Elsewhere the
    lengths are walked one by one and the records gathered per length.
    """
    blocks: list[tuple[np.ndarray, np.ndarray]] = []
    walked: list[int] = []
    n = len(raw)
    pos = 0
    walk = 64
    unpack = struct.unpack_from
    while pos + _HEADER <= n:
        lengths: list[int] = []
        at = pos
        while len(lengths) < 2 * _MAX_PERIOD and at + _HEADER <= n:
            (length,) = unpack("<Q", raw, at)
            if at + length + _HEADER + _FOOTER > n:
                break
            lengths.append(length)
            at += length + _HEADER + _FOOTER
        if not lengths:
            break
        period = _period(lengths)
        if period:
            cycle = lengths[:period]
            span = sum(cycle) + period * (_HEADER + _FOOTER)
            count = (n - pos) // span
            probe = min(count, 64)
            same = _same_cycles(buf, pos, span, probe, cycle)
            if same == probe and probe < count:
                same = _same_cycles(buf, pos, span, count, cycle)
            if same >= 4:
                offset = 0
                for length in cycle:
                    width = length + _HEADER + _FOOTER
                    rows = np.lib.stride_tricks.as_strided(
                        buf[pos + offset :], (same, width), (span, 1), writeable=False
                    )
                    starts = pos + offset + span * np.arange(same, dtype=np.int64)
                    blocks.append((starts, rows))
                    offset += width
                pos += same * span
                walk = 64
                continue
        # No repeating pattern here: walk the lengths, then look for one again.
        for _ in range(walk):
            if pos + _HEADER > n:
                break
            (length,) = unpack("<Q", raw, pos)
            if pos + length + _HEADER + _FOOTER > n:
                break
            walked.append(pos)
            pos += length + _HEADER + _FOOTER
        else:
            walk = min(walk * 2, 1 << 16)
            continue
        break
    if walked:
        starts = np.asarray(walked, dtype=np.int64)
        windows = np.lib.stride_tricks.sliding_window_view
        lengths_at = np.ascontiguousarray(windows(buf, 8)[starts]).view("<u8").ravel()
        for length in np.unique(lengths_at).tolist():
            at_length = starts[lengths_at == length]
            blocks.append((at_length, windows(buf, length + _HEADER + _FOOTER)[at_length]))
    return blocks, pos


def _period(lengths: list[int]) -> int:
    """The shortest period with which these record lengths repeat (0: none seen twice)."""
    for period in range(1, min(_MAX_PERIOD, len(lengths) // 2) + 1):
        if all(lengths[i] == lengths[i + period] for i in range(len(lengths) - period)):
            return period
    return 0


def _same_cycles(buf: np.ndarray, pos: int, span: int, count: int, cycle: list[int]) -> int:
    """How many cycles of ``span`` bytes from ``pos`` on hold records of these lengths."""
    block = buf[pos : pos + span * count].reshape(count, span)
    ok = np.ones(count, dtype=bool)
    offset = 0
    for length in cycle:
        ok &= np.ascontiguousarray(block[:, offset : offset + 8]).view("<u8").ravel() == length
        offset += length + _HEADER + _FOOTER
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if len(bad) else count


# -- the protobuf path ----------------------------------------------------------------
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


def _summary_values(event: Any, kinds: dict[str, str]) -> Iterable[tuple[str, str, Any]]:
    """``(tag, "scalar", value)`` and ``(tag, "histogram", Histogram)`` of an event's summary."""
    step, wall = int(event.step), float(event.wall_time)
    for value in event.summary.value:
        tag = value.tag
        plugin = value.metadata.plugin_data.plugin_name if value.HasField("metadata") else ""
        if plugin:
            kinds.setdefault(tag, plugin)
        kind = kinds.get(tag, "")
        which = value.WhichOneof("value")
        if which == "simple_value":
            yield tag, "scalar", float(value.simple_value)
        elif which == "histo":
            h = value.histo
            edges = tuple(map(float, (h.min, *h.bucket_limit)))
            yield tag, "histogram", Histogram(step, wall, edges, tuple(h.bucket))
        elif which == "tensor":
            t = value.tensor
            if len(t.float_val) == 1 and kind in _SCALAR_KINDS and not t.tensor_shape.dim:
                yield tag, "scalar", float(t.float_val[0])  # the usual scalar, the quick way
                continue
            array = tensor_values(t)
            if array is None:
                continue
            values, shape = array
            if kind == "histograms" and len(shape) == 2 and shape[1] == 3:
                rows = [values[i * 3 : i * 3 + 3] for i in range(shape[0])]
                edges = tuple(r[0] for r in rows) + ((rows[-1][1],) if rows else ())
                counts = tuple(r[2] for r in rows)
                yield tag, "histogram", Histogram(step, wall, tuple(map(float, edges)), counts)
            elif kind in _SCALAR_KINDS and len(values) == 1 and not shape:
                yield tag, "scalar", float(values[0])
