"""Write TensorBoard event files in tests without TensorFlow (record framing by hand)."""

from __future__ import annotations

import struct
import time
from pathlib import Path

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c


def frame(data: bytes) -> bytes:
    """One TFRecord: length, its CRC, the data, its CRC."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def scalar_event(tag: str, step: int, value: float) -> bytes:
    """A serialized Event holding one legacy ``simple_value`` scalar."""
    ev = event_pb2.Event(wall_time=time.time(), step=step)
    ev.summary.value.add(tag=tag, simple_value=value)
    return ev.SerializeToString()


class EventWriter:
    """Appends records to one event file; can leave a record half-written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.file = open(path / "events.out.tfevents.1.test", "ab")  # noqa: SIM115
        self._pending = b""
        self.file.write(frame(event_pb2.Event(file_version="brain.Event:2").SerializeToString()))
        self.file.flush()

    def add(self, tag: str, step: int, value: float) -> None:
        """Append one scalar record and flush."""
        self.file.write(frame(scalar_event(tag, step, value)))
        self.file.flush()

    def add_partial(self, tag: str, step: int, value: float) -> None:
        """Append the first part of a record, as a writer caught mid-write leaves it."""
        self._pending = frame(scalar_event(tag, step, value))
        self.file.write(self._pending[:10])
        self.file.flush()

    def finish_partial(self) -> None:
        """Append the rest of the record ``add_partial`` began."""
        self.file.write(self._pending[10:])
        self.file.flush()

    def close(self) -> None:
        """Close the file."""
        self.file.close()


def write_events(
    path: Path, scalars: dict[str, list[tuple[int, float]]], keep_open: bool = False
) -> EventWriter:
    """An event file in ``path`` with these scalars (closed unless ``keep_open``)."""
    w = EventWriter(path)
    for tag, points in scalars.items():
        for step, value in points:
            w.add(tag, step, value)
    if not keep_open:
        w.close()
    return w
