"""Writing TFRecords (event files): CRC32C, the masked checksum, and a framing writer.

A record is its length (8 bytes), the length's masked CRC32C, the data (an ``Event``
proto), the data's masked CRC32C. :class:`RecordFileWriter` frames a block of
records at once; the reader (:mod:`tfstudio.core.eventfile`) checks checksums of
records of one length with numpy through :func:`_group_crcs_ok` (CRC32C is linear).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

_HEADER = 12  # length (8) + its CRC (4)
_FOOTER = 4
_MASK_DELTA = 0xA282EAD8
_POLY = 0x82F63B78  # CRC32C (Castagnoli), reflected
_TABLE_DISTANCES = 1024  # records up to this long get their CRC checked with numpy
_GROUP_MIN = 16  # a writer frames at least this many records of one length with numpy


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
