"""Headless runs record; ``tfstudio runs`` lists them; ``tfstudio export`` writes CSV."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfstudio.core.runs import list_runs, read_scalars

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]

TRAIN = """
import numpy as np, keras
x = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
y = x.sum(axis=1, keepdims=True)
m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
m.compile("sgd", "mse")
m.fit(x, y, batch_size=16, epochs=2, verbose=0)
"""


def tfstudio(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1", PYTHONPATH=str(ROOT))
    env.pop("TFSTUDIO_LOGDIR", None)  # the defaults are what is tested here
    return subprocess.run(
        [sys.executable, "-m", "tfstudio", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


def test_headless_run_records_and_the_cli_lists_and_exports(write_script, tmp_path):
    script = write_script(TRAIN)
    work = tmp_path / "work"
    work.mkdir()
    # default runs directory: ./tfstudio-runs in the working directory
    result = tfstudio("run", str(script), cwd=work)
    assert result.returncode == 0, result.stderr[-2000:]
    [run] = list_runs(work / "tfstudio-runs")
    assert run.name.startswith("train-") and run.status == "finished" and run.steps == 8
    assert f"run recorded in {run.path}" in result.stderr
    # --logdir elsewhere
    other = tmp_path / "elsewhere"
    result = tfstudio("run", "--logdir", str(other), str(script), cwd=work)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(list_runs(other)) == 1

    listing = tfstudio("runs", cwd=work)
    assert listing.returncode == 0, listing.stderr
    [header, line] = listing.stdout.splitlines()
    assert header.split()[:6] == ["Name", "Script", "Date", "Status", "Steps", "loss"]
    # the loss column is the last epoch's mean (what Keras prints), not the last batch's
    epoch_loss = read_scalars(run.path)["epoch/loss"].values[-1]
    assert f"{epoch_loss:.4g}" != f"{run.final_loss:.4g}"
    cells = line.split()  # the date holds a space
    assert [cells[0], *cells[4:7]] == [run.name, "finished", "8", f"{epoch_loss:.4g}"]
    listed = json.loads(tfstudio("runs", "--json", cwd=work).stdout)
    assert [r["name"] for r in listed] == [run.name]
    assert listed[0]["metrics"]["loss"]["last_epoch_mean"] == pytest.approx(epoch_loss)
    assert listed[0]["metrics"]["loss"]["per_step"] is False

    out_csv = tmp_path / "scalars.csv"
    exported = tfstudio("export", str(run.path), "--csv", str(out_csv), cwd=work)
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(out_csv.open()))
    loss = [float(r["value"]) for r in rows if r["tag"] == "step/loss"]
    assert loss == pytest.approx(read_scalars(run.path)["step/loss"].values)
    assert len(loss) == 8

    missing = tfstudio("export", str(tmp_path), "--csv", str(out_csv), cwd=work)
    assert missing.returncode == 2 and "not a run folder" in missing.stderr
    nothing = tfstudio("runs", str(tmp_path / "none"), cwd=work)
    assert nothing.returncode == 2
    assert f"tfstudio runs: no such folder: {tmp_path / 'none'}" in nothing.stderr
    (tmp_path / "empty").mkdir()
    empty = tfstudio("runs", str(tmp_path / "empty"), cwd=work)
    assert empty.returncode == 1 and "no runs in" in empty.stderr


def test_no_record_writes_nothing(write_script, tmp_path):
    result = tfstudio("run", "--no-record", str(write_script(TRAIN)), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (tmp_path / "tfstudio-runs").exists()


def test_a_run_in_the_window_is_recorded_and_listed_in_the_runs_panel(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from tfstudio.core.channel import Channel
    from tfstudio.core.options import RunOptions
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.core.resources import examples
    from tfstudio.ui.main_window import MainWindow

    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    win = MainWindow(channel, launcher, QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    qtbot.addWidget(win)
    win.show()
    try:
        win.run_options = RunOptions(logdir=str(tmp_path / "runs"))
        script = next(p for p in examples() if p.name == "linear_regression.py")
        assert win.open_script(str(script))
        assert win.runs.logdir == tmp_path / "runs"
        with qtbot.waitSignal(win.run_finished, timeout=120_000):
            assert win.run_script(["--epochs", "2"])
        qtbot.waitUntil(lambda: win.runs.tree.topLevelItemCount() == 1, timeout=5000)
        item = win.runs.tree.topLevelItem(0)
        assert item.text(3) == "finished" and item.text(4) == "40"
        name = item.text(0)
        win.runs.select([name])
        qtbot.waitUntil(lambda: not win.runs.loading(), timeout=30_000)
        win.runs.poll()
        [(first, _colour)] = win.runs.picked()
        x, _ = first.steps["loss"].points()
        assert list(x) == list(range(1, 41))
        # Run it again: the run before is drawn faintly behind the live one
        win.runs.select([])
        with qtbot.waitSignal(win.run_finished, timeout=120_000):
            assert win.run_script(["--epochs", "2"])
        qtbot.waitUntil(lambda: not win.runs.loading(), timeout=30_000)
        win.runs.poll()
        win.bridge.flush()
        [layer] = win.metrics.plots["loss"].layers
        assert layer.faint and layer.name == "previous run" and layer.store.name == name
        x, _ = layer.store.steps["loss"].points()
        assert list(x) == list(range(1, 41))
        assert win.metrics.store.steps["loss"].count() == 40  # the live run, on show
    finally:
        win.bridge.stop()
        launcher.shutdown()
