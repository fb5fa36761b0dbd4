"""Fast reading of TensorBoard event files into columns (numpy; no TensorFlow, no Qt).

An event file is a stream of TFRecords (length, its masked CRC32C, an ``Event``
proto, its masked CRC32C). Writers repeat a few layouts over and over: tfstudio's
recorder writes one record per step with the same tags each time, ``tf.summary``
and Keras's ``TensorBoard`` callback one record per value, alternating a few tags.
So records are grouped by length, and each group by *template*: the first record
is parsed once, and every record whose bytes match it outside the variable fields
(wall time, step, values) is decoded with numpy at fixed offsets, checksums
included (CRC32C is linear: the bytes that vary add a table look-up each). Only
records that fit no template (run start, histograms, text, ...) go through the
protobuf parser, as before.

A record still being written at the end of a file is read again, whole, by a
later call (follow). A bad checksum, an impossible length, or a file named like
an event file that holds something else: the reader keeps what came before,
records one note, and reads that file no further. It never raises for a file's
content.
"""

from __future__ import annotations

import operator
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfstudio.core.locations import Location, fs_for

CHUNK_BYTES = 8 << 20  # bytes read and decoded at once: bounds the memory of one step
SAMPLE_BYTES = 1 << 9  # read at each place of a file's overview (see EventFileReader.sample)
SMALL_BYTES = 8 << 10  # up to this many bytes (a followed run's latest) are decoded one by one
_HEADER = 12  # length (8) + its CRC (4)
_FOOTER = 4
_MASK_DELTA = 0xA282EAD8
_POLY = 0x82F63B78  # CRC32C (Castagnoli), reflected
_TABLE_DISTANCES = 1024  # records up to this long get their CRC checked with numpy
_GROUP_MIN = 16  # a writer frames at least this many records of one length with numpy
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


# -- CRC32C ------------------------------------------------------------------------
def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _byte_table()
_TABLE_LIST = _TABLE.tolist()
_shift_tables: np.ndarray | None = None


def _distance_tables() -> np.ndarray:
    """``T[d][b]``: what byte ``b`` followed by ``d`` zero bytes adds to a CRC register."""
    global _shift_tables
    if _shift_tables is None:
        out = np.empty((_TABLE_DISTANCES, 256), dtype=np.uint32)
        t = _TABLE.copy()
        for d in range(_TABLE_DISTANCES):
            out[d] = t
            t = _TABLE[t & 0xFF] ^ (t >> 8)
        _shift_tables = out
    return _shift_tables


def _crc32c_py(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE_LIST
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _c_crc32c() -> Callable[[bytes], int]:
    try:
        import crc32c

        return crc32c.crc32c
    except ImportError:
        return _crc32c_py


crc32c: Callable[[bytes], int] = _c_crc32c()
"""CRC32C of some bytes (the C package when installed, else pure Python)."""


def masked_crc(data: bytes) -> int:
    """The masked CRC32C a TFRecord stores after its length and its data."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")


class RecordFileWriter:
    """Appends TFRecords (length, its masked CRC32C, data, its masked CRC32C) to a local file.

    What ``tf.io.TFRecordWriter`` writes, byte for byte, but :meth:`write_many`
    frames a whole block of records and writes it in one call: TensorFlow's
    writer releases the GIL on every record, and a thread that writes
    thousands of records while a training loop holds the GIL then waits for
    it thousands of times.
    """

    def __init__(self, path: str | os.PathLike[str], buffer_bytes: int = 1 << 20) -> None:
        self._file = open(path, "ab", buffering=buffer_bytes)  # noqa: SIM115 - closed in close()
        self._heads: dict[int, bytes] = {}

    def _head(self, n: int) -> bytes:
        head = self._heads.get(n)
        if head is None:
            length = _LENGTH.pack(n)
            head = length + _CRC.pack(masked_crc(length))
            if len(self._heads) < 4096:
                self._heads[n] = head
        return head

    def write(self, record: bytes) -> None:
        """Append one record."""
        self.write_many((record,))

    def write_many(self, records: Iterable[bytes]) -> None:
        """Append records, framed, in one write.

        A block of records of one length (a recorder's steps) is framed with numpy:
        their CRCs from the first one's and the bytes where the others differ.
        """
        records = records if isinstance(records, list | tuple) else list(records)
        if not records:
            return
        n = len(records[0])
        if len(records) >= _GROUP_MIN and 0 < n <= _TABLE_DISTANCES:
            if len(set(map(len, records))) == 1:
                self._file.write(self._framed(records, n))
                return
        self._file.write(b"".join(self._framed_one_by_one(records)))

    def _framed(self, records: Sequence[bytes], n: int) -> bytes:
        rows = np.frombuffer(b"".join(records), dtype=np.uint8).reshape(len(records), n)
        return self._framed_matrix(rows).tobytes()

    def _framed_matrix(self, rows: np.ndarray) -> np.ndarray:
        """Records of one length (a row each, uint8) framed, a row each."""
        k, n = rows.shape
        out = np.empty((k, _HEADER + n + _FOOTER), dtype=np.uint8)
        out[:, :_HEADER] = np.frombuffer(self._head(n), dtype=np.uint8)
        out[:, _HEADER : _HEADER + n] = rows
        if k >= 4 and 0 < n <= _TABLE_DISTANCES:
            crcs = _mask(_group_crcs(rows, _varying_columns(rows))).astype("<u4")
        else:  # a few rows (a tag's first value), or long ones: one by one
            crcs = np.array([masked_crc(r.tobytes()) for r in rows], dtype="<u4")
        out[:, _HEADER + n :] = crcs.view(np.uint8).reshape(k, _FOOTER)
        return out

    def write_blocks(self, blocks: Sequence[tuple[np.ndarray, Any]]) -> None:
        """Append records given as blocks, in one write, in their order.

        Args:
            blocks: ``(positions, records)``: each record's place in the file's order
                (the blocks' positions together are distinct; gaps are left out), and
                the records: of one length as the rows of a uint8 matrix (framed with
                numpy, no Python per record: a recorder's steps come as a block per
                pattern of tags and length of the step's varint), or a list of bytes
                (a few records, framed one by one).
        """
        blocks = [(np.asarray(at, dtype=np.int64), rows) for at, rows in blocks if len(at)]
        if not blocks:
            return
        if len(blocks) == 1 and not isinstance(blocks[0][1], list):
            self._file.write(self._framed_matrix(blocks[0][1]).data)
            return
        width = np.zeros(max(int(at.max()) for at, _ in blocks) + 1, dtype=np.int64)
        for at, rows in blocks:
            if isinstance(rows, list):
                width[at] = [_HEADER + len(r) + _FOOTER for r in rows]
            else:
                width[at] = _HEADER + rows.shape[1] + _FOOTER
        offsets = np.cumsum(width) - width
        out = np.empty(int(width.sum()), dtype=np.uint8)
        for at, rows in blocks:
            if isinstance(rows, list):
                framed_rows = self._framed_one_by_one(rows)
                for start, framed in zip(offsets[at].tolist(), framed_rows, strict=True):
                    out[start : start + len(framed)] = np.frombuffer(framed, dtype=np.uint8)
            else:
                framed = self._framed_matrix(rows)
                out[offsets[at][:, None] + np.arange(framed.shape[1])] = framed
        self._file.write(out.data)

    def _framed_one_by_one(self, records: Sequence[bytes]) -> list[bytes]:
        head, pack, crc = self._head, _CRC.pack, masked_crc
        return [head(len(r)) + r + pack(crc(r)) for r in records]

    def flush(self) -> None:
        """Push what is buffered to the file."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self._file.close()


def _mask(crc: np.ndarray) -> np.ndarray:
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)


def _varying_columns(rows: np.ndarray) -> np.ndarray:
    """The columns where some row differs from the first."""
    return np.flatnonzero((rows != rows[0]).any(axis=0))


def _group_crcs_ok(rows: np.ndarray, stored: np.ndarray, varying: np.ndarray) -> np.ndarray:
    """Which rows (records of one length, one per row) match their stored masked CRC.

    ``varying``: the columns where rows differ (CRC32C is linear: only they need look-ups).
    """
    n, length = rows.shape
    if n < 4 or length > _TABLE_DISTANCES:
        got = [masked_crc(r.tobytes()) for r in rows]
        return np.asarray(got, dtype=np.uint32) == stored
    return _mask(_group_crcs(rows, varying)) == stored


def _group_crcs(rows: np.ndarray, varying: np.ndarray) -> np.ndarray:
    """The CRC32C of each row (records of one length, at most ``_TABLE_DISTANCES``).

    ``varying``: the columns where rows differ (CRC32C is linear: only they need look-ups).
    """
    length = rows.shape[1]
    base = rows[0].copy()
    base[varying] = 0
    crc = np.full(len(rows), crc32c(base.tobytes()), dtype=np.uint32)
    tables = _distance_tables()
    for j in varying.tolist():
        crc ^= tables[length - 1 - j][rows[:, j]]
    return crc


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


# -- reading one file ---------------------------------------------------------------
class _Chunk:
    """The points and histograms decoded from one chunk, each with its byte position."""

    def __init__(self) -> None:
        self.parts: dict[str, list[tuple[np.ndarray, TagColumns]]] = {}
        self.histograms: list[tuple[int, str, Histogram]] = []

    def add(self, tag: str, order: np.ndarray, cols: TagColumns) -> None:
        self.parts.setdefault(tag, []).append((order, cols))

    def columns(self) -> dict[str, TagColumns]:
        """Each tag's points in file order; the tags in the order they first appear in the
        file (records are decoded grouped by their layout: a reopened run lists its
        metrics in the order the live run did)."""
        out: dict[str, TagColumns] = {}
        tags = list(self.parts)
        firsts = [_first_position(parts) for parts in self.parts.values()]
        if any(a > b for a, b in zip(firsts, firsts[1:], strict=False)):  # (usually not)
            tags = [tags[i] for i in sorted(range(len(tags)), key=firsts.__getitem__)]
        for tag in tags:
            parts = self.parts[tag]
            if len(parts) == 1:
                out[tag] = parts[0][1]
                continue
            parts = [p for p in parts if len(p[0])]
            parts.sort(key=lambda p: int(p[0][0]))
            in_order = all(a[0][-1] < b[0][0] for a, b in zip(parts, parts[1:], strict=False))
            cols = TagColumns.concat(p[1] for p in parts)
            if not in_order:  # parts interleave (layouts in turn): sort by file position
                idx = np.argsort(np.concatenate([p[0] for p in parts]), kind="stable")
                cols = TagColumns(cols.steps[idx], cols.values[idx], cols.wall[idx])
            out[tag] = cols
        return out


def _first_position(parts: list[tuple[np.ndarray, TagColumns]]) -> int:
    """Where a tag's first point is in the file (its parts' orders are each ascending)."""
    if len(parts) == 1:
        order = parts[0][0]
        return int(order[0]) if len(order) else 1 << 62
    return min((int(p[0][0]) for p in parts if len(p[0])), default=1 << 62)


class EventFileReader:
    """Reads one event file into columns, resuming where the last :meth:`read` stopped.

    The reader keeps no points: each :meth:`read` returns what is new, so a run of
    millions of steps can stream through it into a bounded store.

    Args:
        path: the event file (a local path or a URL; URLs are read by byte ranges).
        kinds: tag -> plugin name seen so far (shared by the readers of one folder,
            as TensorBoard's metadata on a tag's first value applies to the rest).
    """

    def __init__(self, path: Location, kinds: dict[str, str] | None = None) -> None:
        self.path = path
        self.offset = 0  # bytes read and decoded (the start of the next record)
        self.size = 0  # the file's size when last looked at
        self.note = ""  # "" or one sentence on where the file is damaged
        self._fs = fs_for(path)
        self._kinds: dict[str, str] = {} if kinds is None else kinds
        self._histograms: dict[str, list[Histogram]] = {}
        # record length -> (layout, a record of it, its fixed spans): a few records
        # appended to a followed file are decoded without protobuf
        # record length -> (its layout, the bytes every record of it repeats: a getter and
        # what it got from the first record)
        self._layouts: dict[int, tuple[_Template, Callable[[bytes], Any], Any]] = {}
        # (start byte, end byte, lowest step, highest step) of each piece read so far:
        # a few entries per file, so a range of steps can be read again exactly.
        self.index: list[tuple[int, int, int, int]] = []

    @property
    def damaged(self) -> bool:
        """Whether reading stopped at damage (see :attr:`note`)."""
        return bool(self.note)

    def histograms_read(self) -> dict[str, list[Histogram]]:
        """The histograms read since the last call, per tag (then forgotten here)."""
        out, self._histograms = self._histograms, {}
        return out

    def refresh_size(self) -> int:
        """The file's size now (0 when it cannot be read)."""
        try:
            self.size = int(self._fs.size(self.path))  # type: ignore[arg-type]
        except OSError:
            self.size = max(self.size, 0)
        return self.size

    def read(
        self, max_bytes: int | None = None, cancelled: Callable[[], bool] | None = None
    ) -> dict[str, TagColumns]:
        """The scalar points appended since the last call, per tag, in file order.

        Args:
            max_bytes: stop after about this many bytes (None: read to the end).
            cancelled: checked between chunks; reading stops when it returns True.
        """
        parts: dict[str, list[TagColumns]] = {}
        if self.note:
            return {}
        self.refresh_size()
        budget = max_bytes if max_bytes is not None else self.size
        # A chunk is at most the budget (but not absurdly small), unless one record needs more.
        chunk_bytes = CHUNK_BYTES if max_bytes is None else min(CHUNK_BYTES, max(max_bytes, 4096))
        want = chunk_bytes
        while self.offset < self.size and budget > 0 and not self.note:
            if cancelled is not None and cancelled():
                break
            n = min(want, self.size - self.offset)
            try:
                raw = self._read(self.offset, n)
            except OSError:
                break  # unreachable just now: try again on the next read
            if not raw:
                break
            at_end = self.offset + len(raw) >= self.size
            used, need, chunk = self._decode(raw, at_end)
            columns = chunk.columns()
            for tag, cols in columns.items():
                parts.setdefault(tag, []).append(cols)
            if columns:
                lo = min(int(c.steps.min()) for c in columns.values())
                hi = max(int(c.steps.max()) for c in columns.values())
                self.index.append((self.offset, self.offset + used, lo, hi))
            for _, tag, h in chunk.histograms:
                self._histograms.setdefault(tag, []).append(h)
            self.offset += used
            budget -= max(used, 1)
            if used == 0:
                if need and self.offset + need <= self.size and need > n:
                    want = need  # one record bigger than a chunk: read it whole
                    continue
                break  # the rest is a record still being written
            want = chunk_bytes
        return {tag: TagColumns.concat(cols) for tag, cols in parts.items()}

    def read_steps(
        self, first: int, last: int, cancelled: Callable[[], bool] | None = None
    ) -> dict[str, TagColumns]:
        """Every point with ``first <= step <= last`` among what was read, read again.

        Only the pieces of the file whose steps overlap the range are read (see
        :attr:`index`): a view that keeps a decimated envelope gets a zoomed-in
        range back exactly, without keeping every point. ``cancelled``: checked
        between pieces; reading stops when it returns True.
        """
        parts: dict[str, list[TagColumns]] = {}
        for start, end, lo, hi in list(self.index):
            if hi < first or lo > last:
                continue
            if cancelled is not None and cancelled():
                break
            try:
                raw = self._read(start, end - start)
            except OSError:
                continue
            again = EventFileReader(self.path, self._kinds)
            again.offset, again.size = start, self.size
            _, _, chunk = again._decode(raw, True)
            for tag, cols in chunk.columns().items():
                keep = (cols.steps >= first) & (cols.steps <= last)
                if keep.any():
                    cut = TagColumns(cols.steps[keep], cols.values[keep], cols.wall[keep])
                    parts.setdefault(tag, []).append(cut)
        return {tag: TagColumns.concat(cols) for tag, cols in parts.items()}

    def sample(self, count: int, window: int = SAMPLE_BYTES) -> dict[str, TagColumns]:
        """A few scalar points from ``count`` evenly spaced places of the file: an overview
        of its whole length, read before the file is read in order.

        At each place the reader looks for the next whole record (a length whose masked
        CRC matches, then its data's) and decodes the records of ``window`` bytes there.
        Reads nothing in order (:attr:`offset` does not move).
        """
        size = self.refresh_size()
        parts: dict[str, list[TagColumns]] = {}
        for i in range(count):
            start = size * i // count
            try:
                raw = self._read(start, min(window, size - start))
            except OSError:
                continue
            at = _next_record(raw)
            if at is None:
                continue
            again = EventFileReader(self.path, self._kinds)
            again.offset, again.size = start + at, size
            _, _, chunk = again._decode(raw[at:], False)
            for tag, cols in chunk.columns().items():
                parts.setdefault(tag, []).append(cols)
        return {tag: TagColumns.concat(cols) for tag, cols in parts.items()}

    def _read(self, offset: int, n: int) -> bytes:
        read_range = getattr(self._fs, "read_range", None)
        if read_range is not None:
            return read_range(self.path, offset, n)
        return self._fs.read_bytes(self.path)[offset : offset + n]  # type: ignore[arg-type]

    def _damage(self, at: int, what: str) -> None:
        self.note = (
            f"{self.path}: {what} at byte {at:,} of {self.size:,}; "
            "read up to there, the rest of the file is not shown"
        )

    # -- decoding one chunk --------------------------------------------------------
    def _decode(self, raw: bytes, at_end: bool) -> tuple[int, int, _Chunk]:
        """Decode the whole records of ``raw``: (bytes used, bytes the next one needs, points)."""
        if len(raw) <= SMALL_BYTES:
            return self._decode_few(raw, at_end)
        chunk = _Chunk()
        buf = np.frombuffer(raw, dtype=np.uint8)
        blocks, end = _frame(raw, buf)
        need = 0
        bad_at = end  # the first damaged record's start (end: none)
        what = ""
        varying_by_block: list[np.ndarray | None] = []
        for starts, rows in blocks:
            length = rows.shape[1] - _HEADER - _FOOTER
            # The length's CRC depends only on the length: one value per block.
            head_crc = np.ascontiguousarray(rows[:, 8:12]).view("<u4").ravel()
            bad = head_crc != masked_crc(struct.pack("<Q", length))
            if bad.any() and int(starts[int(np.argmax(bad))]) < bad_at:
                bad_at, what = int(starts[int(np.argmax(bad))]), "a record with a bad length"
            data = rows[:, _HEADER : _HEADER + length]
            stored = np.ascontiguousarray(rows[:, _HEADER + length :]).view("<u4").ravel()
            varying = _varying_columns(data) if len(data) >= 4 else None
            good = _group_crcs_ok(data, stored, varying)
            varying_by_block.append(varying)
            if not good.all() and int(starts[int(np.argmin(good))]) < bad_at:
                bad_at, what = int(starts[int(np.argmin(good))]), "a record with a bad checksum"
        if what:
            self._damage(self.offset + bad_at, what)
            end = bad_at
        elif end + _HEADER <= len(raw):
            # The next record does not fit in this chunk: a real length, or garbage?
            (length,) = struct.unpack_from("<Q", raw, end)
            (crc,) = struct.unpack_from("<I", raw, end + 8)
            if crc != masked_crc(raw[end : end + 8]):
                self._damage(self.offset + end, "not a TFRecord (bad length checksum)")
            else:
                need = length + _HEADER + _FOOTER
        elif end < len(raw) and not at_end:
            need = _HEADER
        slow: list[tuple[int, int]] = []
        for (starts, rows), varying in zip(blocks, varying_by_block, strict=True):
            if what:
                keep = starts < bad_at
                if not keep.all():
                    starts, rows, varying = starts[keep], rows[keep], None
            if len(starts):
                length = rows.shape[1] - _HEADER - _FOOTER
                data = rows[:, _HEADER : _HEADER + length]
                slow += [(s, length) for s in self._templated(chunk, starts, data, varying)]
        slow.sort()
        stop = self._slow(chunk, raw, slow)
        if stop is not None:
            end = stop
        return end, need, chunk

    def _decode_few(self, raw: bytes, at_end: bool) -> tuple[int, int, _Chunk]:
        """:meth:`_decode` for a few records (a followed run's latest): one by one, as the
        vectorised path's fixed cost is worth it only for many."""
        chunk = _Chunk()
        unpack = struct.unpack_from
        n = len(raw)
        pos = need = 0
        which: list[tuple[int, int]] = []
        while pos + _HEADER <= n:
            (length,) = unpack("<Q", raw, pos)
            end = pos + _HEADER + length + _FOOTER
            if end > n:
                break
            if unpack("<I", raw, pos + 8)[0] != masked_crc(raw[pos : pos + 8]):
                self._damage(self.offset + pos, "a record with a bad length")
                which.sort()
                self._slow(chunk, raw, which)
                return pos, 0, chunk
            if unpack("<I", raw, end - _FOOTER)[0] != masked_crc(raw[pos + _HEADER : end - 4]):
                self._damage(self.offset + pos, "a record with a bad checksum")
                self._slow(chunk, raw, which)
                return pos, 0, chunk
            which.append((pos, length))
            pos = end
        if pos + _HEADER <= n:
            (length,) = unpack("<Q", raw, pos)
            if unpack("<I", raw, pos + 8)[0] != masked_crc(raw[pos : pos + 8]):
                self._damage(self.offset + pos, "not a TFRecord (bad length checksum)")
            else:
                need = length + _HEADER + _FOOTER
        elif pos < n and not at_end:
            need = _HEADER
        stop = self._slow(chunk, raw, self._few_templated(chunk, raw, which))
        return (pos if stop is None else stop), need, chunk

    def _few_templated(
        self, chunk: _Chunk, raw: bytes, which: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Decode the records (start, length) that fit a layout seen before in this file,
        one by one at fixed offsets; returns the others, for the protobuf parser."""
        slow: list[tuple[int, int]] = []
        groups: dict[int, tuple[_Template, list[int], list[int], list[bytes]]] = {}
        for start, length in which:
            body = raw[start + _HEADER : start + _HEADER + length]
            known = self._layouts.get(length)
            if known is None or known[1](body) != known[2]:
                tpl = _template(body)
                if tpl is None:
                    slow.append((start, length))
                    continue
                fixed = _span_getter(_fixed_spans(tpl, length))
                known = (tpl, fixed, fixed(body))
                self._layouts[length] = known
                for tag in tpl.described:
                    self._kinds.setdefault(tag, "scalars")
            tpl = known[0]
            step = 0
            if tpl.step >= 0:
                step, end = _uvarint(body, tpl.step)
                if end != tpl.step + tpl.step_width:  # a step of another width: not this layout
                    slow.append((start, length))
                    continue
            group = groups.get(id(tpl))
            if group is None:
                group = groups[id(tpl)] = (tpl, [], [], [])
            group[1].append(start)
            group[2].append(step)
            group[3].append(body)
        for tpl, starts, steps, bodies in groups.values():
            wall = np.array([_F64.unpack_from(b, tpl.wall)[0] for b in bodies], np.float64)
            step_col = np.array(steps, np.int64)
            for k, (tag, off, fmt) in enumerate(tpl.values):
                if self._kinds.get(tag, "") not in _SCALAR_KINDS:
                    continue
                unpack = (_F32 if fmt == "<f4" else _F64).unpack_from
                values = np.array([unpack(b, off)[0] for b in bodies], np.float64)
                order = np.array(starts, np.int64) + k
                chunk.add(tag, order, TagColumns(step_col, values, wall))
        return slow

    def _templated(
        self, chunk: _Chunk, starts: np.ndarray, rows: np.ndarray, varying: np.ndarray | None
    ) -> list[int]:
        """Decode the records (rows of event bytes, one length) that fit a template.

        ``varying``: the columns where the rows differ, when known. Returns the
        starts of the other records, for the protobuf parser.
        """
        slow: list[int] = []
        misses = 0
        while len(starts):
            tpl = _template(rows[0].tobytes())
            if tpl is None:
                slow.append(int(starts[0]))
                starts, rows = starts[1:], rows[1:]
                misses += 1
                if misses > 8:  # records of this length are not scalars: parse them all
                    slow += starts.tolist()
                    break
                continue
            fixed = np.ones(rows.shape[1], dtype=bool)
            fixed[tpl.variable_columns()] = False
            if varying is not None and not fixed[varying].any():
                match = np.ones(len(rows), dtype=bool)  # rows differ only where values go
            else:
                fixed_cols = np.flatnonzero(fixed)
                match = (rows[:, fixed_cols] == rows[0, fixed_cols]).all(axis=1)
            varying = None  # it described the whole block, not what is left of it
            if tpl.step >= 0:
                steps, well_formed = _varints(rows, tpl.step, tpl.step_width)
                match &= well_formed
            if match.all():
                here, sub, rest = starts, rows, None
            else:
                sub = rows[match]
                here, rest = starts[match], ~match
                if tpl.step >= 0:
                    steps = steps[match]
            wall = _fixed_width(sub, tpl.wall, "<f8")
            step = steps if tpl.step >= 0 else np.zeros(len(sub), np.int64)
            for tag in tpl.described:
                self._kinds.setdefault(tag, "scalars")
            for tag, off, fmt in tpl.values:
                if self._kinds.get(tag, "") not in _SCALAR_KINDS:
                    continue
                values = _fixed_width(sub, off, fmt).astype(np.float64)
                chunk.add(tag, here + off, TagColumns(step, values, wall))
            if rest is None:
                break
            starts, rows = starts[rest], rows[rest]
        return slow

    def _slow(self, chunk: _Chunk, raw: bytes, which: list[tuple[int, int]]) -> int | None:
        """Parse these records with protobuf; returns where to stop when one is not an Event."""
        from google.protobuf.message import DecodeError
        from tensorboard.compat.proto import event_pb2

        points: dict[str, tuple[list[int], list[int], list[float], list[float]]] = {}
        for start, length in which:
            body = raw[start + _HEADER : start + _HEADER + length]
            try:
                event = event_pb2.Event.FromString(body)
            except DecodeError:
                self._damage(self.offset + start, "a record that is not a TensorBoard event")
                self._drop_after(chunk, start, points)
                return start
            if not event.HasField("summary"):
                continue
            for k, (tag, kind, payload) in enumerate(_summary_values(event, self._kinds)):
                if kind == "scalar":
                    p = points.setdefault(tag, ([], [], [], []))
                    p[0].append(start + k)
                    p[1].append(int(event.step))
                    p[2].append(payload)
                    p[3].append(float(event.wall_time))
                else:
                    chunk.histograms.append((start, tag, payload))
        for tag, (order, steps, values, wall) in points.items():
            cols = TagColumns(
                np.asarray(steps, np.int64), np.asarray(values, np.float64), np.asarray(wall)
            )
            chunk.add(tag, np.asarray(order, np.int64), cols)
        return None

    @staticmethod
    def _drop_after(chunk: _Chunk, start: int, points: dict[str, Any]) -> None:
        """Forget what was decoded past a damaged record (the file is read up to it)."""
        for tag, parts in list(chunk.parts.items()):
            kept = []
            for order, cols in parts:
                sel = order < start
                kept.append(
                    (order[sel], TagColumns(cols.steps[sel], cols.values[sel], cols.wall[sel]))
                )
            chunk.parts[tag] = kept
        chunk.histograms = [h for h in chunk.histograms if h[0] < start]
        for p in points.values():
            while p[0] and p[0][-1] >= start:
                for column in p:
                    column.pop()


def _fixed_spans(tpl: _Template, length: int) -> list[tuple[int, int]]:
    """The byte spans of a layout's records that every record of it repeats."""
    fixed = np.ones(length, dtype=bool)
    fixed[tpl.variable_columns()] = False
    edges = np.flatnonzero(np.diff(np.concatenate(([0], fixed.astype(np.int8), [0]))))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")  # a value, and every record's wall time


def _span_getter(spans: list[tuple[int, int]]) -> Callable[[bytes], Any]:
    """One C call that cuts every span out of a record (compared as a whole)."""
    if not spans:
        return lambda body: b""
    return operator.itemgetter(*(slice(a, b) for a, b in spans))


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
