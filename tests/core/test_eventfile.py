"""The fast event-file reader: same values as the protobuf path, damage, following, listing."""

from __future__ import annotations

import csv
import math
import struct

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2

from tests.core.tfevents import (
    EventWriter,
    frame,
    recorder_file,
    reference_read,
    scalar_event,
    tf_summary_event,
    write_events,
)
from tfstudio.core import locations
from tfstudio.core.eventfile import EventFileReader, TagColumns
from tfstudio.core.runs import (
    GLANCE_BYTES,
    RunFolderReader,
    RunReader,
    describe_run,
    export_scalars_csv,
    list_runs,
)

# Steps around every change of the step varint's width (1..5 bytes), 2**21 included.
WIDTH_EDGES = [1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**40]


def _steps() -> list[int]:
    steps: list[int] = []
    for edge in WIDTH_EDGES:
        steps += range(max(edge - 20, steps[-1] + 1 if steps else 0), edge + 20)
    return steps


def _assert_same(path, columns, histograms=None):
    ref_scalars, ref_histograms = reference_read(path)
    assert sorted(columns) == sorted(ref_scalars)
    for tag, (steps, values, wall) in ref_scalars.items():
        got = columns[tag]
        assert got.steps.dtype == np.int64 and got.values.dtype == np.float64
        assert got.steps.tolist() == steps, tag
        np.testing.assert_array_equal(got.values, np.asarray(values), err_msg=tag)  # NaN == NaN
        assert got.wall.tolist() == wall, tag
    if histograms is not None:
        assert histograms == ref_histograms


def test_recorder_layout_reads_as_the_protobuf_path(tmp_path):
    steps = _steps()
    special = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-45, 3.4e38]
    values = [
        {
            "step/loss": special[i % len(special)] if i % 5 == 0 else 1.0 / (i + 1),
            "step/accuracy": i / len(steps),
            "learning_rate": 0.001,
        }
        for i in range(len(steps))
    ]
    hist = {s: {"weights/dense/kernel": ([0.0, 0.5, 1.0], [3.0, 4.0])} for s in steps[::37]}
    path = recorder_file(tmp_path / "run", steps, values, hist)
    reader = EventFileReader(path)
    columns = reader.read()
    histograms = reader.histograms_read()
    assert reader.note == "" and reader.offset == reader.size == path.stat().st_size
    assert len(columns["step/loss"]) == len(steps)
    assert columns["step/loss"].steps[-1] == 2**40 + 19
    loss = columns["step/loss"].values
    assert np.isnan(loss[0]) and loss[5] == np.float32(1e-45) and loss[15] == np.inf
    assert len(histograms["weights/dense/kernel"]) == len(steps[::37])
    _assert_same(path, columns, histograms)


def test_other_writers_layouts_read_as_the_protobuf_path(tmp_path):
    records = [
        frame(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
    ]
    for s in range(300):
        wall = 1.7e9 + s
        # tf.summary: one value a record, tags in turn ("loss"/"acc1": same length, other bytes)
        records.append(frame(tf_summary_event("loss", s, 1.0 / (s + 1), wall)))
        records.append(frame(tf_summary_event("acc1", s, s * 0.25, wall)))
        records.append(frame(tf_summary_event("batch_mean_absolute_error", s, -s, wall)))
        records.append(frame(tf_summary_event("epoch_learning_rate", s, 0.1, wall, double=True)))
        records.append(frame(scalar_event("legacy", s, math.nan if s == 7 else s)))  # simple_value
        if s % 50 == 0:  # something else now and then: text, a legacy histogram
            ev = event_pb2.Event(wall_time=wall, step=s)
            ev.summary.value.add(tag="notes").tensor.string_val.append(b"hello")
            h = ev.summary.value.add(tag="old_hist").histo
            h.min, h.max = 0.0, 1.0
            h.bucket_limit.extend([0.5, 1.0])
            h.bucket.extend([2.0, 3.0])
            records.append(frame(ev.SerializeToString()))
    path = tmp_path / "tf" / "events.out.tfevents.2.other"
    path.parent.mkdir()
    path.write_bytes(b"".join(records))
    reader = EventFileReader(path)
    columns = reader.read()
    assert len(columns["acc1"]) == len(columns["loss"]) == 300
    assert "notes" not in columns
    assert len(reader.histograms_read()["old_hist"]) == 6
    _assert_same(path, columns)


def test_reads_return_only_new_points(tmp_path):
    run = tmp_path / "r"
    writer = write_events(run, {"step/loss": [(s, s * 0.5) for s in range(100)]}, keep_open=True)
    reader = RunFolderReader(run)
    first = reader.read()
    assert first["step/loss"].steps.tolist() == list(range(100))
    assert reader.read() == {}
    for s in range(100, 150):
        writer.add("step/loss", s, s * 0.5)
    second = reader.read()
    assert second["step/loss"].steps.tolist() == list(range(100, 150))
    assert reader.progress()[0] == reader.progress()[1] > 0
    writer.close()


def test_max_bytes_reads_in_pieces_and_cancel_stops(tmp_path):
    steps = list(range(20_000))
    recorder_file(tmp_path / "r", steps, [{"step/loss": float(s)} for s in steps])
    reader = RunFolderReader(tmp_path / "r")
    got: list[TagColumns] = []
    while True:
        new = reader.read(max_bytes=64 << 10)
        if not new:
            break
        got.append(new["step/loss"])
        done, total = reader.progress()
        assert 0 < done <= total
    assert len(got) > 5
    assert TagColumns.concat(got).steps.tolist() == steps
    cancelled = RunFolderReader(tmp_path / "r")
    cancelled.cancel()
    assert cancelled.read() == {} and cancelled.progress()[0] == 0


def test_truncated_tail_while_following_is_read_once_complete(tmp_path):
    run = tmp_path / "r"
    writer = EventWriter(run)
    for s in range(20):
        writer.add("step/loss", s, float(s))
    writer.add_partial("step/loss", 20, 20.0)
    reader = RunReader(run)
    assert reader.update() == 20
    assert reader.notes() == []
    assert reader.update() == 0
    writer.finish_partial()
    assert reader.update() == 1
    assert reader.scalars["step/loss"].steps == list(range(21))
    assert reader.notes() == []
    writer.close()


def _record_starts(path):
    data = path.read_bytes()
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += struct.unpack_from("<Q", data, pos)[0] + 16
    return starts


def _flip(path, at):
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_bad_checksum_mid_file_keeps_the_good_part_with_one_note(tmp_path):
    logdir = tmp_path / "runs"
    steps = list(range(1, 201))
    path = recorder_file(logdir / "a", steps, [{"step/loss": s * 1.0} for s in steps])
    start_100 = _record_starts(path)[100]  # step 100's record (after the file_version one)
    _flip(path, start_100 + 20)  # a byte in its data: its CRC no longer matches
    reader = RunFolderReader(logdir / "a")
    columns = reader.read()
    assert columns["step/loss"].steps.tolist() == list(range(1, 100))
    [note] = reader.notes()
    assert path.name in note and f"byte {start_100:,}" in note and "checksum" in note
    assert reader.read() == {}  # the damage is not read again and again
    assert reader.notes() == [note]
    [run] = list_runs(logdir)
    assert run.steps == 99 and run.final_loss == 99.0


def test_bad_length_mid_file_keeps_the_good_part(tmp_path):
    run = tmp_path / "r"
    write_events(run, {"step/loss": [(s, 1.0) for s in range(50)]})
    path = next(run.iterdir())
    _flip(path, _record_starts(path)[11] + 2)  # the 11th scalar record's length
    reader = RunFolderReader(run)
    assert reader.read()["step/loss"].steps.tolist() == list(range(10))
    [note] = reader.notes()
    assert "length" in note


def test_garbage_and_empty_files_named_like_event_files(tmp_path):
    logdir = tmp_path / "runs"
    write_events(logdir / "good", {"step/loss": [(1, 0.5), (2, 0.25)]})
    (logdir / "good" / "events.out.tfevents.9.garbage").write_bytes(
        np.random.default_rng(0).bytes(5000)
    )
    (logdir / "empty").mkdir()
    (logdir / "empty" / "events.out.tfevents.1.empty").write_bytes(b"")
    (logdir / "junk").mkdir()
    (logdir / "junk" / "events.out.tfevents.1.junk").write_bytes(b"not a TFRecord at all, " * 20)
    reader = RunReader(logdir / "good")
    reader.update()
    assert reader.scalars["step/loss"].values == [0.5, 0.25]
    [note] = reader.notes()
    assert "events.out.tfevents.9.garbage" in note and "byte 0" in note
    empty = RunFolderReader(logdir / "empty")
    assert empty.read() == {} and empty.notes() == []
    junk = RunFolderReader(logdir / "junk")
    assert junk.read() == {} and len(junk.notes()) == 1
    runs = {r.name: r for r in list_runs(logdir)}
    assert sorted(runs) == ["empty", "good", "junk"]
    assert runs["good"].final_loss == 0.25 and runs["junk"].steps is None


def test_listing_a_big_log_folder_reads_only_heads_and_tails(tmp_path, monkeypatch):
    steps = list(range(1, 150_001))
    path = recorder_file(
        tmp_path / "runs" / "big",
        steps,
        [{"step/loss": 1.0 / s, "step/accuracy": 0.5} for s in steps],
    )
    size = path.stat().st_size
    assert size > 5 * GLANCE_BYTES
    read: list[int] = []
    original = locations.LocalFS.read_range

    def counting(self, p, offset, length):
        data = original(self, p, offset, length)
        read.append(len(data))
        return data

    monkeypatch.setattr(locations.LocalFS, "read_range", counting)
    [run] = list_runs(tmp_path / "runs")
    assert run.status == "tensorboard" and run.steps == 150_000
    assert run.final_loss == pytest.approx(1.0 / 150_000)
    assert run.started == pytest.approx(1.7e9)
    assert sum(read) < size / 3
    assert describe_run(tmp_path / "runs" / "big") == run


def test_keras_sub_folders_are_prefixed(tmp_path):
    run = tmp_path / "keras"
    for sub, loss in (("train", 0.5), ("validation", 0.75)):
        p = run / sub / "events.out.tfevents.1.k"
        p.parent.mkdir(parents=True)
        p.write_bytes(
            b"".join(frame(tf_summary_event("epoch_loss", s, loss, 1.0)) for s in range(3))
        )
    columns = RunFolderReader(run).read()
    assert columns["validation/epoch_loss"].values.tolist() == [0.75] * 3
    assert columns["train/epoch_loss"].steps.tolist() == [0, 1, 2]


def test_export_gives_the_rows_the_record_by_record_export_gave(tmp_path):
    steps = list(range(1, 3001))
    values = [{"step/loss": 1.0 / s, "step/a,b": math.nan if s == 5 else s * 0.1} for s in steps]
    path = recorder_file(tmp_path / "run", steps, values)
    out = tmp_path / "out.csv"
    assert export_scalars_csv(tmp_path / "run", out) == 6000
    ref, _ = reference_read(path)
    expected = tmp_path / "expected.csv"
    with open(expected, "w", newline="", encoding="utf-8") as f:  # the export before the fast path
        w = csv.writer(f)
        w.writerow(["tag", "step", "value", "wall_time"])
        for tag in sorted(ref):
            for s, v, t in zip(*ref[tag], strict=True):
                w.writerow([tag, s, repr(v), f"{t:.6f}"])
    assert out.read_bytes() == expected.read_bytes()


def test_float32_bytes_round_trip_exactly(tmp_path):
    bits = np.random.default_rng(1).integers(0, 2**32, 500, dtype=np.uint64).astype(np.uint32)
    floats = bits.view(np.float32)
    steps = list(range(500))
    path = recorder_file(tmp_path / "r", steps, [{"x": float(v)} for v in floats])
    got = EventFileReader(path).read()["x"].values
    same = (got.astype(np.float32).view(np.uint32) == bits) | np.isnan(floats)
    assert same.all()
    assert struct.pack("<f", float(got[3])) == struct.pack("<f", float(floats[3]))


def test_pieces_of_any_size_add_up_to_the_whole(tmp_path):
    steps = list(range(1, 2001))
    hist = {s: {"weights/w": ([0.0, 1.0, 2.0], [1.0, 2.0])} for s in steps[::100]}
    path = recorder_file(
        tmp_path / "r", steps, [{"a": s * 1.0, "b": -s * 1.0} for s in steps], hist
    )
    with open(path, "ab") as f:  # another writer's records after the recorder's
        for s in range(500):
            f.write(frame(tf_summary_event("other" if s % 3 else "o2", s, s / 7, 2.0)))
    whole = EventFileReader(path).read()
    rng = np.random.default_rng(3)
    reader = EventFileReader(path)
    pieces: dict[str, list[TagColumns]] = {}
    histograms = 0
    while reader.offset < path.stat().st_size:
        for tag, cols in reader.read(max_bytes=int(rng.integers(1, 20_000))).items():
            pieces.setdefault(tag, []).append(cols)
        histograms += sum(len(h) for h in reader.histograms_read().values())
    assert reader.note == "" and histograms == 20
    assert sorted(pieces) == sorted(whole)
    for tag, cols in whole.items():
        joined = TagColumns.concat(pieces[tag])
        assert joined.steps.tolist() == cols.steps.tolist()
        assert joined.values.tolist() == cols.values.tolist()


def test_url_event_files_are_read_by_byte_ranges(tmp_path, monkeypatch):
    steps = list(range(1, 3001))
    path = recorder_file(tmp_path / "runs" / "r", steps, [{"step/loss": s * 1.0} for s in steps])
    data = path.read_bytes()
    url = locations.UrlPath(f"file://{path}")
    fs = locations.reader_fs()
    assert fs.read_range(url, 1000, 64) == data[1000:1064]
    asked: list[tuple[int, int]] = []
    original = locations.GFileFS.read_range

    def counting(self, p, offset, length):
        asked.append((offset, length))
        return original(self, p, offset, length)

    monkeypatch.setattr(locations.GFileFS, "read_range", counting)
    reader = EventFileReader(url)
    first = reader.read(max_bytes=len(data) // 2)
    rest = reader.read()
    got = TagColumns.concat([first["step/loss"], rest["step/loss"]])
    assert got.steps.tolist() == steps
    assert asked[0][0] == 0 and asked[-1][0] > 0  # the second read starts where the first ended
    assert sum(n for _, n in asked) <= len(data) + 4096  # each byte read about once


def test_a_range_of_steps_is_read_again_exactly_from_its_pieces(tmp_path, monkeypatch):
    steps = list(range(1, 40_001))
    values = [{"step/loss": 1.0 / s, "step/acc": s * 1e-5} for s in steps]
    recorder_file(tmp_path / "r", steps, values)
    reader = RunFolderReader(tmp_path / "r")
    whole: dict[str, list[TagColumns]] = {}
    while new := reader.read(max_bytes=100_000):
        for tag, cols in new.items():
            whole.setdefault(tag, []).append(cols)
    full = {tag: TagColumns.concat(parts) for tag, parts in whole.items()}
    read: list[int] = []
    original = locations.LocalFS.read_range

    def counting(self, p, offset, length):
        read.append(length)
        return original(self, p, offset, length)

    monkeypatch.setattr(locations.LocalFS, "read_range", counting)
    zoom = reader.read_steps(20_000, 20_500)
    assert sorted(zoom) == ["step/acc", "step/loss"]
    for tag, cols in zoom.items():
        sel = (full[tag].steps >= 20_000) & (full[tag].steps <= 20_500)
        assert cols.steps.tolist() == full[tag].steps[sel].tolist() == list(range(20_000, 20_501))
        assert cols.values.tolist() == full[tag].values[sel].tolist()
    assert sum(read) <= 3 * 100_000  # the pieces holding those steps, not the file
    assert reader.read_steps(10**9, 10**9 + 5) == {}


def test_tags_come_in_the_order_they_first_appear_in_the_file():
    """Records are decoded grouped by their layout (one group per record length and
    layout), so a tag can be met first in a group of later records; the tags still come
    in file order, so a reopened run lists its metrics as the live run did (an eager
    loop's last step had `seen` without `train_acc`: `seen` came first)."""
    from tfstudio.core.eventfile import _Chunk

    def cols(steps: list[int]) -> TagColumns:
        a = np.asarray(steps, dtype=np.int64)
        return TagColumns(a, a * 0.5, a * 1.0)

    chunk = _Chunk()  # as the decoder added them for a real run's file
    chunk.add("step/loss", np.array([11006, 11090]), cols([3, 4]))
    chunk.add("step/loss", np.array([141]), cols([1]))
    chunk.add("running/seen", np.array([33234]), cols([80]))
    chunk.add("running/train_acc", np.array([11825, 17859]), cols([12, 22]))
    chunk.add("running/seen", np.array([18840]), cols([33]))
    chunk.add("running/train_acc", np.array([10902]), cols([2]))
    chunk.add("running/seen", np.array([10941]), cols([2]))
    columns = chunk.columns()
    assert list(columns) == ["step/loss", "running/train_acc", "running/seen"]
    assert columns["step/loss"].steps.tolist() == [1, 3, 4]
    assert columns["running/seen"].steps.tolist() == [2, 33, 80]
    assert columns["running/train_acc"].steps.tolist() == [2, 12, 22]
