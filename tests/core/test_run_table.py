"""The runs table in core: rows, columns, filters, notes, and ``tfstudio runs`` (no TF)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.tfevents import write_events
from tfstudio.core.run_notes import NOTES_JSON, parse_tags, read_notes, write_notes
from tfstudio.core.run_table import (
    FilterError,
    default_visible,
    format_table,
    parse_filter,
    run_row,
    sort_rows,
    table_columns,
)
from tfstudio.core.runs import list_runs

ROOT = Path(__file__).resolve().parents[2]

SWEEP = {  # name: (optimizer, learning rate, batch size, epoch losses, epoch val losses)
    "adam-small": ("adam", 0.001, 32, [0.9, 0.4], [0.8, 0.25]),
    "adam-big": ("adam", 0.01, 64, [0.8, 0.3], [0.7, 0.35]),
    "sgd-big": ("sgd", 0.1, 128, [1.2, 0.6], [1.1, 0.29]),
    "sgd-small": ("sgd", 0.01, 16, [1.0, 0.5], [0.9, 0.5]),
}


def make_sweep(logdir: Path) -> Path:
    for i, (name, (opt, lr, bs, losses, vals)) in enumerate(SWEEP.items()):
        path = logdir / name
        write_events(
            path,
            {
                "step/loss": [(s, 0.05 * s) for s in range(1, 9)],  # last batch: 0.4
                "epoch/loss": [(4, losses[0]), (8, losses[1])],
                "epoch/val_loss": [(4, vals[0]), (8, vals[1])],
            },
        )
        hparams = {"optimizer": opt, "optimizer.learning_rate": lr, "batch_size": bs}
        hparams |= {"loss": "mse", "epochs": 2, "tensorflow": "2.21.0"}
        info = {"status": "finished", "start_time": 1.7e9 + i, "steps": 8, "hparams": hparams}
        (path / "run.json").write_text(json.dumps(info))
    return logdir


@pytest.fixture
def rows(tmp_path):
    return [run_row(r) for r in list_runs(make_sweep(tmp_path))]


def kept(rows, text):
    f = parse_filter(text, table_columns(rows))
    return sorted(r.run.name for r in rows if f.matches(r))


def test_columns_hold_hparams_and_each_metrics_last_epoch_mean_best_and_step(rows):
    columns = {c.title: c for c in table_columns(rows)}
    row = next(r for r in rows if r.run.name == "sgd-big")
    assert columns["loss"].text(row) == "0.6"  # the last epoch's mean, not the last batch (0.4)
    assert columns["val_loss"].text(row) == "0.29"
    assert columns["val_loss.best"].text(row) == "0.29"
    assert columns["val_loss.best_step"].text(row) == "8"
    assert columns["optimizer.learning_rate"].text(row) == "0.1"
    assert columns["batch_size"].text(row) == "128"
    assert columns["hp.loss"].text(row) == "mse"  # the loss function, beside the loss metric
    shown = [t for t, c in columns.items() if default_visible(c, rows)]
    # hparams that are the same in every run, and the versions, are hidden unless asked for;
    # the optimizer, learning rate, batch size and epochs always show
    assert "hp.loss" not in shown and "tensorflow" not in shown
    assert {"optimizer", "optimizer.learning_rate", "batch_size", "epochs"} <= set(shown)
    assert "val_loss.best" in shown
    assert "loss.best" not in shown


def test_filters_by_value_keep_exactly_the_matching_runs(rows):
    assert kept(rows, "val_loss < 0.3") == ["adam-small", "sgd-big"]
    assert kept(rows, "optimizer == adam") == ["adam-big", "adam-small"]
    assert kept(rows, "OPTIMIZER = Adam") == ["adam-big", "adam-small"]  # any case
    assert kept(rows, "batch_size >= 64") == ["adam-big", "sgd-big"]
    assert kept(rows, "batch_size >= 64 and optimizer != adam") == ["sgd-big"]
    assert kept(rows, "optimizer.learning_rate <= 0.01 and val_loss > 0.3") == [
        "adam-big",
        "sgd-small",
    ]
    assert kept(rows, "val_loss.best_step == 8") == sorted(SWEEP)
    # figures recorded as float32 compare as they are shown: 0.29 (kept as 0.28999999) is 0.29
    assert kept(rows, "val_loss == 0.29") == ["sgd-big"]
    assert kept(rows, "val_loss >= 0.29 and val_loss <= 0.29") == ["sgd-big"]
    assert kept(rows, "val_loss < 0.29") == ["adam-small"]
    assert kept(rows, "hp.loss == mse") == sorted(SWEEP)
    assert kept(rows, "small") == ["adam-small", "sgd-small"]  # text: in the name
    assert kept(rows, "") == sorted(SWEEP)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("val_loss <", "filter 'val_loss <': no value after '<'"),
        ("val_los < 0.3", "filter 'val_los < 0.3': no column 'val_los' (columns: Name,"),
        ("val_loss < low", "filter 'val_loss < low': val_loss holds numbers; 'low' is not one"),
        ("< 0.3", "filter '< 0.3': write COLUMN OP VALUE, e.g. val_loss < 0.3"),
    ],
)
def test_a_bad_filter_says_what_is_wrong(rows, text, message):
    with pytest.raises(FilterError) as err:
        parse_filter(text, table_columns(rows))
    assert str(err.value).startswith(message)


def test_notes_are_kept_in_the_run_folder_and_filterable(tmp_path):
    logdir = make_sweep(tmp_path)
    run = logdir / "adam-big"
    assert read_notes(run).tags == () and read_notes(run).note == ""
    written = write_notes(run, " best , lr sweep,best,, ", "  the one to beat\n")
    assert written.tags == ("best", "lr sweep") and written.note == "the one to beat"
    assert json.loads((run / NOTES_JSON).read_text()) == {
        "tags": ["best", "lr sweep"],
        "note": "the one to beat",
    }
    assert read_notes(run) == written
    assert "notes" not in json.loads((run / "run.json").read_text())  # never in run.json
    rows = [run_row(r) for r in list_runs(logdir)]
    assert kept(rows, "lr sweep") == ["adam-big"]  # text: a tag
    assert kept(rows, "beat") == ["adam-big"]  # text: the note
    assert kept(rows, "tags ~ best") == ["adam-big"]
    (logdir / "sgd-big" / NOTES_JSON).write_text("{not json")
    assert read_notes(logdir / "sgd-big").tags == ()  # unreadable: no notes, no error
    with pytest.raises(ValueError, match="tag too long"):
        parse_tags("x" * 65)
    with pytest.raises(OSError, match="no such run folder"):
        write_notes(tmp_path / "gone", "a", "")


def test_sort_and_text_table(rows):
    columns = {c.title: c for c in table_columns(rows)}
    order = [r.run.name for r in sort_rows(rows, columns["val_loss"])]
    assert order == ["adam-small", "sgd-big", "adam-big", "sgd-small"]
    order = [r.run.name for r in sort_rows(rows, columns["batch_size"], descending=True)]
    assert order == ["sgd-big", "adam-big", "adam-small", "sgd-small"]
    text = format_table(rows[:1], [columns["Name"], columns["loss"], columns["optimizer"]])
    assert text.splitlines() == ["Name        loss  optimizer", "adam-small   0.4  adam"]


def tfstudio_runs(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "tfstudio", "runs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_tfstudio_runs_prints_the_table_and_json_for_scripts(tmp_path):
    logdir = make_sweep(tmp_path)
    write_notes(logdir / "sgd-big", "best", "high lr, big batch")
    out = tfstudio_runs(str(logdir), "--json")
    assert out.returncode == 0, out.stderr
    runs = {r["name"]: r for r in json.loads(out.stdout)}
    assert list(runs) == ["sgd-small", "sgd-big", "adam-big", "adam-small"]  # newest first
    big = runs["sgd-big"]
    assert big["path"] == str(logdir / "sgd-big") and big["status"] == "finished"
    assert big["hparams"]["optimizer.learning_rate"] == 0.1 and big["hparams"]["batch_size"] == 128
    assert big["metrics"]["loss"] == {
        "last_epoch_mean": pytest.approx(0.6),
        "best": pytest.approx(0.6),
        "best_step": 8,
        "per_step": False,
    }
    assert big["metrics"]["val_loss"]["best"] == pytest.approx(0.29)
    assert big["tags"] == ["best"] and big["note"] == "high lr, big batch"

    out = tfstudio_runs(str(logdir), "--filter", "val_loss < 0.3", "--sort", "val_loss")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:6] == ["Name", "Script", "Date", "Status", "Steps", "loss"]
    assert [line.split()[0] for line in lines[1:]] == ["adam-small", "sgd-big"]
    assert "high lr, big batch" in lines[2]

    out = tfstudio_runs(str(logdir), "--columns", "name,val_loss,batch_size", "--sort", "name")
    assert out.stdout.splitlines()[:2] == [
        "Name        val_loss  batch_size",
        "adam-big        0.35  64",
    ]

    bad = tfstudio_runs(str(logdir), "--filter", "val_loss <")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "tfstudio runs: filter 'val_loss <': no value after '<'"
    bad = tfstudio_runs(str(logdir), "--columns", "name,nope")
    assert bad.returncode == 2 and "--columns: no column 'nope'" in bad.stderr


def test_a_run_recorded_before_hyperparameters_shows_what_its_run_json_says(tmp_path):
    run = tmp_path / "old-20261101-000000"
    write_events(run, {"epoch/loss": [(10, 0.5)]})
    info = {
        "status": "finished",
        "argv": ["train.py", "--epochs", "3"],
        "segments": [
            {"kind": "fit", "model": "mlp", "class": "Sequential", "params": 4547, "epochs": 3,
             "steps_per_epoch": 10},
        ],
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(info))
    [row] = [run_row(r) for r in list_runs(tmp_path)]
    assert row.hparams == {
        "epochs": 3,
        "steps_per_epoch": 10,
        "model": "mlp",
        "model.class": "Sequential",
        "model.params": 4547,
        "args": "--epochs 3",
    }
