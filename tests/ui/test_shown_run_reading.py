"""A reopened run is read off the GUI thread and shown when read; its state is its own while
a live run goes on; a run followed while it grows has its parts read again (issue 56)."""

from __future__ import annotations

import json
import threading

import pytest

from tests.core.tfevents import recorder_file
from tfstudio.core import run_parts
from tfstudio.core.events import ConsoleOutput, RunStarted
from tfstudio.core.run_record import OUTPUT_LOG

START = 1_700_000_000.0
STEPS = 400  # inspector samples: one per step, each of VARIABLES variables
VARIABLES = 12


def write_big_run(folder, status="finished"):
    """A run folder with many inspector samples (weights statistics and a histogram of
    each variable at every step), a console text and a system sample per step."""
    paths = [f"mlp/dense_{i}/kernel" for i in range(VARIABLES)]
    steps = list(range(1, STEPS + 1))
    values = []
    for s in steps:
        row = {"step/loss": 1.0 / s, "system/process/cpu_percent": 50.0 + s % 7}
        for i, p in enumerate(paths):
            row[f"weights/{p}/mean"] = 0.001 * s + i
            row[f"weights/{p}/std"] = 1.0
            row[f"weights/{p}/norm"] = 2.0
        values.append(row)
    edges = [float(e) for e in range(-16, 17)]
    hists = {s: {f"weights/{p}": (edges, [float(s % 5 + 1)] * 32) for p in paths} for s in steps}
    recorder_file(folder, steps, values, hists)
    info = {
        "status": status,
        "exit_code": 0,
        "start_time": START,
        "steps": STEPS,
        "segments": [
            {"index": 0, "model": "mlp", "class": "Sequential", "epochs": 1,
             "steps_per_epoch": STEPS, "start_step": 0, "start_time": 0.0}
        ],
        "hparams": {"optimizer": "Adam", "batch_size": 8},
        "variables": {p: [4, 4] for p in paths},
    }  # fmt: skip
    if status == "running":
        info.update(hostname="elsewhere", pid=1, updated=9e99)  # written by a live writer
    (folder / "run.json").write_text(json.dumps(info))
    (folder / OUTPUT_LOG).write_text("epoch 1\nhello from the big run\n")
    return info


def test_a_big_reopened_run_loads_while_the_window_answers_and_shows_when_read(
    window, qtbot, tmp_path, monkeypatch
):
    folder = tmp_path / "big-20260101-000000"
    write_big_run(folder)
    # The GUI thread's timer fires during the read: the read waits for five of its ticks
    # (a read on the GUI thread would wait in vain, and fail below).
    ticks = []
    ticked = threading.Event()
    timer_hit = {"during_read": 0}

    def tick() -> None:
        ticks.append(1)
        if window.session.shown.loading:
            timer_hit["during_read"] += 1
        if len(ticks) >= 5:
            ticked.set()

    read = run_parts.PartsFeed.read
    waited = []

    def gated_read(feed):
        waited.append(ticked.wait(5.0))
        return read(feed)

    monkeypatch.setattr(run_parts.PartsFeed, "read", gated_read)
    from PySide6.QtCore import QTimer

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(10)
    model = window.show_run(str(folder))
    # shown at once, as being read: every view says so
    assert window.session.shown is model and model.loading
    window.bridge.flush()
    assert window.status.state_text() == "reading… — run 'big-20260101-000000'"
    assert "reading…" in window.console.text()
    window.inspector.show_view("weights")
    window.inspector.refresh()
    assert "Reading the run's weights from its folder" in window.inspector.weights.info.text()
    qtbot.waitUntil(lambda: not model.loading, timeout=60_000)
    timer.stop()
    assert waited == [True], "the read was not made while the GUI thread's timer fired"
    assert timer_hit["during_read"] >= 5
    # read: every view shows the run
    assert model.notes == []
    assert len(model.inspector.weights) == VARIABLES
    assert len(model.inspector.weights["mlp/dense_0/kernel"].steps) == STEPS
    window.inspector.refresh()
    assert list(window.inspector.weights.rows) == [
        f"mlp/dense_{i}/kernel" for i in range(VARIABLES)
    ]
    assert "hello from the big run" in window.console.text()
    assert "reading…" not in window.console.text()
    assert window.status.state_text() == "finished — run 'big-20260101-000000' (recorded)"
    assert window.status.step_label.text() == f"step {STEPS}/{STEPS}"
    assert len(window.system.cpu_curve.getData()[0]) == STEPS
    assert model.hparams == {"optimizer": "Adam", "batch_size": 8}


def test_the_state_is_the_shown_runs_and_a_hint_leads_back_to_the_live_run(
    window, qtbot, channel, tmp_path
):
    folder = tmp_path / "old-20260101-000000"
    write_big_run(folder)
    # a live run goes on
    channel.emit(RunStarted("/proj/live.py", ("/proj/live.py",), "/proj", 0.0, 1))
    channel.emit(ConsoleOutput("stdout", "live text\n"))
    window.bridge.tick()
    assert window.status.state_text() == "running" and window.status.hint_text() == ""
    window.show_run(str(folder))
    assert window.parts.wait()
    assert window.status.state_text() == "finished — run 'old-20260101-000000' (recorded)"
    assert window.status.hint_text() == "live run running: show it"
    assert window.status.live_hint.isVisible() or not window.isVisible()
    # the live run's state moves on: the hint follows it
    window.status.set_state("paused")
    assert window.status.hint_text() == "live run paused: show it"
    assert window.status.state_text().startswith("finished — run 'old-")
    # the hint's link shows the live run again, in every view
    window.status.live_hint.linkActivated.emit("live")
    assert window.session.shown is window.session.live
    assert window.status.state_text() == "paused" and window.status.hint_text() == ""
    window.bridge.flush()
    assert "live text" in window.console.text()


def test_a_followed_reopened_run_has_its_console_system_and_hparams_read_again(
    window, qtbot, tmp_path
):
    folder = tmp_path / "growing-20260101-000000"
    info = write_big_run(folder, status="running")
    window.parts.follow_s = 0.05
    model = window.show_run(str(folder))
    assert window.parts.wait()
    assert model.recorded_status == "running"
    assert window.status.state_text() == (
        "running — run 'growing-20260101-000000' (recorded, still being written)"
    )
    assert len(window.system.cpu_curve.getData()[0]) == STEPS
    # the run writes on: more output, system samples, hyperparameters of a second fit
    with open(folder / OUTPUT_LOG, "a") as f:
        f.write("epoch 2\n")
    recorder_file(
        folder,
        [STEPS + 1, STEPS + 2],
        [{"system/process/cpu_percent": 10.0}, {"system/process/cpu_percent": 11.0}],
        name="events.out.tfevents.2.recorder.v2",
    )
    info["hparams"]["fit2.epochs"] = 3
    (folder / "run.json").write_text(json.dumps(info))
    qtbot.waitUntil(lambda: "epoch 2" in window.console.text(), timeout=20_000)
    qtbot.waitUntil(lambda: len(window.system.cpu_curve.getData()[0]) == STEPS + 2, timeout=20_000)
    cpu = window.system.cpu_curve.getData()[1] * _cores(window)
    assert sorted(cpu)[:2] == pytest.approx([10.0, 11.0])  # the new samples are drawn
    qtbot.waitUntil(lambda: model.hparams.get("fit2.epochs") == 3, timeout=20_000)
    # the text grew: appended, the head and the first lines once
    text = window.console.text()
    assert text.count("hello from the big run") == 1 and text.endswith("epoch 2\n")
    # the run ends: no more reads
    info["status"] = "finished"
    (folder / "run.json").write_text(json.dumps(info))
    qtbot.waitUntil(lambda: model.recorded_status == "finished", timeout=20_000)
    assert window.status.state_text() == "finished — run 'growing-20260101-000000' (recorded)"
    follows = window.parts.follows
    qtbot.wait(300)
    assert window.parts.follows == follows


def _cores(window) -> int:
    """What the CPU curve divides a process's CPU share by (the machine's cores)."""
    import os

    samples = window.system.samples
    return samples[-1].cpu_count if samples else (os.cpu_count() or 1)
