"""A reopened run shows in every view as the live one does (issue 56): its metrics, console,
system samples, checkpoints, notices, progress and inspector samples, from its folder alone;
the live run's views come back when it is shown again."""

from __future__ import annotations

import json

import numpy as np

from tests.core.tfevents import recorder_file
from tfstudio.core.events import CheckpointSaved, ConsoleOutput, Notice
from tfstudio.core.run_record import EVENTS_LOG, OUTPUT_LOG, event_line

START = 1_700_000_000.0
SAVED = CheckpointSaved("/c/ckpt-4", 4, 2.0, 0.25, START + 2.0, 0.01, True)


def write_run(folder):
    """A finished run's folder as the recorder leaves it: event file, run.json, output.log,
    events.jsonl (one fit of 4 steps, weights sampled at step 4, two system samples)."""
    steps = [1, 2, 3, 4]
    values = [
        {
            "step/loss": 1.0 / s,
            "system/process/cpu_percent": 50.0 + s,
            "system/process/rss_bytes": float(s << 20),
            "weights/mlp/dense/kernel/mean": 0.1 * s,
        }
        for s in steps
    ]
    hists = {4: {"weights/mlp/dense/kernel": ([-1.0, 0.0, 1.0], [3.0, 5.0])}}
    recorder_file(folder, steps, values, hists)
    info = {
        "status": "finished",
        "exit_code": 0,
        "start_time": START,
        "steps": 4,
        "segments": [
            {"index": 0, "model": "mlp", "class": "Sequential", "epochs": 1,
             "steps_per_epoch": 4, "start_step": 0, "start_time": 0.0}
        ],
        "hparams": {"optimizer": "Adam", "batch_size": 8},
        "variables": {"mlp/dense/kernel": [2, 1], "mlp/dense/bias": [1]},
    }  # fmt: skip
    (folder / "run.json").write_text(json.dumps(info))
    (folder / OUTPUT_LOG).write_text("epoch 1\nhello from the reopened run\n")
    (folder / EVENTS_LOG).write_text(
        event_line(SAVED, START + 2.0) + "\n"
        + event_line(Notice("retracing", "traced 6 times"), START + 3.0) + "\n"
    )  # fmt: skip


def test_every_view_shows_a_reopened_run_and_the_live_one_comes_back(window, channel, tmp_path):
    channel.emit(ConsoleOutput("stdout", "live text\n"))
    window.bridge.tick()
    folder = tmp_path / "train-20260101-000000"
    write_run(folder)

    model = window.show_run(str(folder))  # read on the session's reader thread
    assert window.parts.wait()
    window.bridge.flush()
    assert model.notes == [] and window.session.shown is model and not model.live
    # metrics
    assert "loss" in window.metrics.plots and window.metrics.store is model.metrics
    # console: the run's output.log, not the live text
    text = window.console.text()
    assert "hello from the reopened run" in text and "live text" not in text
    # system: its recorded samples, drawn on the same curves as live
    t, cpu = window.system.cpu_curve.getData()
    assert len(t) == 4 and window.system.rss_curve.getData()[1][-1] == 4 / 1024
    assert "recorded in run 'train-20260101-000000'" in window.system.summary()
    # checkpoints: listed, not restorable (the run is over)
    assert window.checkpoints.paths() == ["/c/ckpt-4"]
    window.checkpoints.select("/c/ckpt-4")
    assert not window.checkpoints.restore_button.isEnabled()
    # notices: the run's retracing notice
    assert [a.rule for a in window.notices.notices()] == ["retracing"]
    # status: where the run ended
    assert window.status.step_label.text() == "step 4/4"
    assert window.status.loss_label.text() == "loss 0.25"
    # inspector: its weights in the window's own tabs
    window.inspector.show_view("weights")
    window.inspector.refresh()
    assert window.inspector.store is model.inspector
    assert list(window.inspector.weights.rows) == ["mlp/dense/kernel"]
    np.testing.assert_allclose(model.inspector.weights["mlp/dense/kernel"].scalars["mean"], [0.4])
    assert model.hparams == {"optimizer": "Adam", "batch_size": 8}
    # the model dock: the tree rebuilt from the variables' paths and shapes
    [tree] = model.inspector.trees.values()
    [dense] = tree.root.children
    assert (tree.root.name, tree.root.class_name, dense.name) == ("mlp", "Sequential", "dense")
    assert [(v.name, v.shape) for v in dense.variables] == [("kernel", (2, 1)), ("bias", (1,))]
    assert tree.root.trainable_params == 3
    assert window.inspector.model.tree.topLevelItemCount() == 1

    window.session.show(window.session.live)  # the live run again, in every view
    window.bridge.flush()
    assert "live text" in window.console.text()
    assert "hello from the reopened run" not in window.console.text()
    assert window.checkpoints.paths() == [] and window.notices.notices() == []
    assert window.inspector.store is window.session.live.inspector
