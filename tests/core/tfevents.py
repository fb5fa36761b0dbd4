"""Write TensorBoard event files in tests without TensorFlow (record framing by hand)."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import crc32c
from tensorboard.compat.proto import event_pb2


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC32C, written from its definition (TensorFlow's
    ``crc32c::Mask``), not tfstudio's; the C ``crc32c`` package (tensorboard's pure-Python
    stub took ~12 s of the UI tests)."""
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    """One TFRecord: length, its CRC, the data, its CRC."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def scalar_event(tag: str, step: int, value: float, wall: float | None = None) -> bytes:
    """A serialized Event holding one legacy ``simple_value`` scalar (written now, or at
    ``wall``)."""
    ev = event_pb2.Event(wall_time=time.time() if wall is None else wall, step=step)
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

    def add(self, tag: str, step: int, value: float, wall: float | None = None) -> None:
        """Append one scalar record (written now, or at ``wall``) and flush."""
        self.file.write(frame(scalar_event(tag, step, value, wall)))
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


def recorder_file(
    path: Path,
    steps: list[int],
    values: list[dict[str, float]],
    histograms: dict[int, dict[str, tuple[list[float], list[float]]]] | None = None,
    name: str = "events.out.tfevents.1.recorder.v2",
) -> Path:
    """An event file with the bytes tfstudio's recorder writes: one record per step.

    ``histograms``: step -> tag -> (edges, counts), written after that step's scalars.
    Uses the recorder's own encoding functions (they need no TensorFlow).
    """
    from tfstudio.engine.recorder import histogram_event, scalars_event

    path.mkdir(parents=True, exist_ok=True)
    described: set[str] = set()
    out = [frame(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())]
    for i, (step, vals) in enumerate(zip(steps, values, strict=True)):
        out.append(frame(scalars_event(step, vals, 1.7e9 + i * 0.001, described)))
        for tag, (edges, counts) in ((histograms or {}).get(step) or {}).items():
            out.append(frame(histogram_event(tag, step, edges, counts, 1.7e9 + i * 0.001)))
    target = path / name
    target.write_bytes(b"".join(out))
    return target


def tf_summary_event(tag: str, step: int, value: float, wall: float, double: bool = False) -> bytes:
    """The bytes ``tf.summary.scalar`` (and Keras's TensorBoard callback) writes for one value.

    One value per record, a scalar tensor in ``tensor_content``, the scalars plugin's
    metadata on every record (as TF 2.21 writes them, looked at byte by byte).
    """
    ev = event_pb2.Event(wall_time=wall, step=step)
    val = ev.summary.value.add(tag=tag)
    val.metadata.plugin_data.plugin_name = "scalars"
    val.tensor.dtype = 2 if double else 1
    val.tensor.tensor_shape.SetInParent()
    val.tensor.tensor_content = struct.pack("<d" if double else "<f", value)
    return ev.SerializeToString()


def reference_read(
    path: Path,
) -> tuple[dict[str, tuple[list[int], list[float], list[float]]], dict[str, list]]:
    """Scalars and histograms of one event file through the protobuf path, record by record.

    Framing by TensorBoard's own TensorFlow-free record reader; parsing by
    ``event_pb2`` and the summary rules of :mod:`tfstudio.core.eventfile`.
    """
    from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow

    from tfstudio.core.eventfile import _summary_values

    reader = pywrap_tensorflow.PyRecordReader_New(str(path))
    kinds: dict[str, str] = {}
    scalars: dict[str, tuple[list[int], list[float], list[float]]] = {}
    histograms: dict[str, list] = {}
    while True:
        try:
            reader.GetNext()
        except (errors.OutOfRangeError, errors.DataLossError):
            break
        event = event_pb2.Event.FromString(reader.record())
        if not event.HasField("summary"):
            continue
        for tag, kind, payload in _summary_values(event, kinds):
            if kind == "scalar":
                s = scalars.setdefault(tag, ([], [], []))
                s[0].append(int(event.step))
                s[1].append(payload)
                s[2].append(float(event.wall_time))
            else:
                histograms.setdefault(tag, []).append(payload)
    return scalars, histograms
