"""read_hparams: a run folder's hyperparameters from run.json or TensorBoard's HParams data."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap

import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.hparams import api_pb2, metadata

from tfstudio.core.eventfile import RecordFileWriter
from tfstudio.core.hparams import (
    clean,
    read_hparams,
    session_end_event,
    session_start_event,
)

VALUES = {
    "optimizer": "Adam",
    "optimizer.learning_rate": 0.003,
    "batch_size": 32,
    "amsgrad": False,
    "args": "--epochs 3",
}


def _events(path) -> list:
    """Every ``Event`` of a file, framed as TFRecords (length, crc, data, crc): TensorBoard's
    loader would import TensorFlow (this file's quick tests run without it)."""
    data, at, out = path.read_bytes(), 0, []
    while at + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        out.append(event_pb2.Event.FromString(data[at + 12 : at + 12 + length]))
        at += 12 + length + 4
    return out


def _write(folder, *records: bytes, name: str = "events.out.tfevents.1.host.1.00000.v2"):
    folder.mkdir(parents=True, exist_ok=True)
    writer = RecordFileWriter(folder / name)
    writer.write(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
    for record in records:
        writer.write(record)
    writer.close()
    return folder / name


def test_values_round_trip_through_the_event_file_and_tensorboards_parser(tmp_path):
    path = _write(
        tmp_path / "run",
        session_start_event(VALUES, start_time=100.0, wall_time=101.0),
        session_end_event("finished", end_time=150.0),
    )
    assert read_hparams(tmp_path / "run") == VALUES  # ints stay ints, bools bools
    # TensorBoard's own parser (its hparams plugin's metadata module) finds the same session
    content = {}
    for event in _events(path):
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name == metadata.PLUGIN_NAME:
                content[value.tag] = value.metadata.plugin_data.content
    start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
    assert start.start_time_secs == 100.0
    assert start.hparams["optimizer"].string_value == "Adam"
    assert start.hparams["batch_size"].number_value == 32.0
    assert start.hparams["amsgrad"].bool_value is False
    assert start.group_name  # a session group, as hp.hparams gives one
    end = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
    assert end.status == api_pb2.STATUS_SUCCESS and end.end_time_secs == 150.0


def test_statuses():
    def status(s: str) -> int:
        event = event_pb2.Event.FromString(session_end_event(s, 1.0))
        data = event.summary.value[0].metadata.plugin_data.content
        return metadata.parse_session_end_info_plugin_data(data).status

    assert status("finished") == api_pb2.STATUS_SUCCESS
    assert status("failed") == api_pb2.STATUS_FAILURE
    assert status("interrupted") == api_pb2.STATUS_FAILURE
    assert status("stopped") == api_pb2.STATUS_UNKNOWN


def test_run_json_comes_first(tmp_path):
    run = tmp_path / "run"
    _write(run, session_start_event({"optimizer": "SGD"}, 1.0, 1.0))
    (run / "run.json").write_text(json.dumps({"hparams": {"optimizer": "Adam", "epochs": 3}}))
    assert read_hparams(run) == {"optimizer": "Adam", "epochs": 3}


def test_a_keras_folder_keeps_them_in_train(tmp_path):
    _write(tmp_path / "logs" / "train", session_start_event({"units": 16}, 1.0, 1.0))
    _write(tmp_path / "logs" / "validation")
    assert read_hparams(tmp_path / "logs") == {"units": 16}


def test_no_hparams_missing_or_damaged_folders_read_as_empty(tmp_path):
    assert read_hparams(tmp_path / "missing") == {}
    _write(tmp_path / "plain")
    assert read_hparams(tmp_path / "plain") == {}
    path = _write(tmp_path / "cut", session_start_event({"units": 16}, 1.0, 1.0))
    data = path.read_bytes()
    path.write_bytes(data[:-10])  # a record cut short (a file being written)
    assert read_hparams(tmp_path / "cut") == {}
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "run.json").write_text("{not json")
    assert read_hparams(tmp_path / "bad") == {}


def test_clean_makes_plain_values():
    import numpy as np

    out = clean({"a": np.float32(0.5), "b": np.int64(3), "c": None, "d": np.bool_(True), 5: [1]})
    assert out == {"a": 0.5, "b": 3, "d": True, "5": "[1]"}
    assert type(out["a"]) is float and type(out["b"]) is int and type(out["d"]) is bool


@pytest.mark.tf
def test_a_folder_written_by_tensorflows_hp_hparams_reads_back(tmp_path):
    logdir = tmp_path / "hparam_tuning" / "run-0"
    script = textwrap.dedent(
        f"""
        import tensorflow as tf
        from tensorboard.plugins.hparams import api as hp
        units = hp.HParam("num_units", hp.Discrete([16, 32]))
        with tf.summary.create_file_writer({str(logdir)!r}).as_default():
            hp.hparams({{units: 16, "dropout": 0.1, "optimizer": "adam", "bn": True}})
            tf.summary.scalar("accuracy", 0.5, step=1)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    assert read_hparams(logdir) == {
        "num_units": 16,
        "dropout": 0.1,
        "optimizer": "adam",
        "bn": True,
    }
