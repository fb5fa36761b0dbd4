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
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from tfstudio.core.eventfile_decode import (
    _SCALAR_KINDS,
    Histogram,
    TagColumns,
    _fixed_width,
    _frame,
    _next_record,
    _summary_values,
    _Template,
    _template,
    _uvarint,
    _varints,
    merge_columns,
    tensor_values,
)
from tfstudio.core.eventfile_writer import (
    _FOOTER,
    _HEADER,
    RecordFileWriter,
    _group_crcs_ok,
    _varying_columns,
    masked_crc,
)
from tfstudio.core.locations import Location, fs_for

CHUNK_BYTES = 8 << 20  # bytes read and decoded at once: bounds the memory of one step
SAMPLE_BYTES = 1 << 9  # read at each place of a file's overview (see EventFileReader.sample)
SMALL_BYTES = 8 << 10  # up to this many bytes (a followed run's latest) are decoded one by one


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


__all__ = [  # the reader, and what the readers of event files import from here
    "CHUNK_BYTES",
    "EventFileReader",
    "Histogram",
    "RecordFileWriter",
    "TagColumns",
    "masked_crc",
    "merge_columns",
    "tensor_values",
]
