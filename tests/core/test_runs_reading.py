"""Reading run folders in the window process: no TensorFlow, only what was appended."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.core.tfevents import write_events
from tfstudio.core.runs import (
    ENDING_CHARS,
    RunReader,
    delete_run,
    export_scalars_csv,
    format_run_line,
    list_runs,
    rename_run,
    run_status,
)


def test_reading_runs_does_not_import_tensorflow(tmp_path):
    write_events(tmp_path / "runs" / "a-20260101-000000", {"step/loss": [(1, 0.5), (2, 0.25)]})
    code = textwrap.dedent(
        f"""
        import sys
        from tfstudio.core.runs import list_runs, read_scalars
        [run] = list_runs({str(tmp_path / "runs")!r})
        curve = read_scalars(run.path)["step/loss"]
        assert curve.steps == [1, 2] and curve.values == [0.5, 0.25], curve
        assert "tensorflow" not in sys.modules, "reading imported TensorFlow"
        print("ok", run.status, run.steps)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "tensorboard", "2"]


def test_reader_reads_only_what_was_appended(tmp_path):
    run = tmp_path / "r"
    writer = write_events(run, {"step/loss": [(1, 1.0)]}, keep_open=True)
    reader = RunReader(run)
    assert reader.update() == 1
    assert reader.update() == 0
    writer.add("step/loss", 2, 0.5)
    writer.add_partial("step/loss", 3, 0.25)
    assert reader.update() == 1
    assert reader.scalars["step/loss"].steps == [1, 2]
    writer.finish_partial()
    assert reader.update() == 1
    assert reader.scalars["step/loss"].values == [1.0, 0.5, 0.25]


def test_status_list_rename_delete_export(tmp_path):
    logdir = tmp_path / "runs"
    a = write_events(logdir / "a-20260101-000000", {"step/loss": [(1, 2.0), (2, 1.0)]})
    info = {
        "status": "finished",
        "start_time": 1.0,
        "steps": 2,
        "final_loss": 1.0,
        "script": "a.py",
    }
    (a.path / "run.json").write_text(json.dumps(info))
    write_events(logdir / "b-20260101-000001", {"epoch_loss": [(0, 3.0)]})  # a TensorBoard log
    runs = list_runs(logdir)
    assert [r.name for r in runs] == ["a-20260101-000000", "b-20260101-000001"]
    assert runs[0].status == "finished" and runs[0].final_loss == 1.0
    assert runs[1].status == "tensorboard" and runs[1].final_loss == 3.0
    assert "a-20260101-000000" in format_run_line(runs[0])
    csv_path = tmp_path / "a.csv"
    assert export_scalars_csv(a.path, csv_path) == 2
    assert csv_path.read_text().splitlines()[1].startswith("step/loss,1,2.0,")
    renamed = rename_run(a.path, "baseline")
    assert renamed.name == "baseline" and (renamed / "run.json").exists()
    with pytest.raises(ValueError):
        rename_run(renamed, "../x")
    delete_run(renamed)
    assert [r.name for r in list_runs(logdir)] == ["b-20260101-000001"]
    with pytest.raises(ValueError):
        delete_run(tmp_path)  # not a run folder


def test_the_runs_list_says_under_a_failed_or_stopped_run_why(tmp_path):
    """``tfstudio runs``: a failed run's error (type, where, telling line; one line, clipped)
    and a stopped run's message go on a second, indented line; a finished run has one."""
    logdir = tmp_path / "runs"
    graph_error = (
        "Graph execution error:\n\nDetected at node sequential_1/dense_1/Relu defined at "
        "(most recent call last):\n  File x.py, line 5\n"
        "Matrix size-incompatible: In[0]: [32,5], In[1]: [8,16]\n"
        "\t [[{{node sequential_1/dense_1/Relu}}]]"
    )
    infos = {
        "a-20260101-000000": {"status": "finished", "start_time": 1.0, "steps": 4},
        "b-20260101-000001": {
            "status": "failed",
            "start_time": 2.0,
            "steps": 0,
            "error": {"type": "InvalidArgumentError", "message": graph_error, "where": "x.py:5"},
        },
        "d-20260101-000003": {
            "status": "failed",
            "start_time": 4.0,
            "error": {"type": "ValueError", "message": "too long " * 60, "where": "y.py:9"},
        },
        "c-20260101-000002": {
            "status": "stopped",
            "start_time": 3.0,
            "message": "stopped at step 7",
        },
    }
    for name, info in infos.items():
        run = write_events(logdir / name, {"step/loss": [(1, 2.0)]})
        (run.path / "run.json").write_text(json.dumps(info))
    lines = {r.name: format_run_line(r).split("\n") for r in list_runs(logdir)}
    assert len(lines["a-20260101-000000"]) == 1
    first, why = lines["b-20260101-000001"]
    assert "failed" in first
    assert why == (
        "    InvalidArgumentError at x.py:5: Matrix size-incompatible: In[0]: [32,5], "
        "In[1]: [8,16] (in graph node sequential_1/dense_1/Relu)"
    )
    clipped = lines["d-20260101-000003"][1]
    assert clipped.startswith("    ValueError at y.py:9: too long too long")
    assert clipped.endswith("...") and len(clipped.strip()) == ENDING_CHARS
    assert lines["c-20260101-000002"][1] == "    stopped at step 7"


def test_running_status_turns_interrupted_when_the_writer_is_gone():
    import os
    import socket

    here = socket.gethostname()
    assert run_status({"status": "running", "hostname": here, "pid": os.getpid()}) == "running"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert run_status({"status": "running", "hostname": here, "pid": gone.pid}) == "interrupted"
    stale = {"status": "running", "hostname": "elsewhere", "pid": 1, "updated": 0.0}
    assert run_status(stale, now=1000.0) == "interrupted"
    assert run_status({**stale, "updated": 990.0}, now=1000.0) == "running"


def test_a_reopened_runs_system_samples_are_not_metric_lines(tmp_path):
    from tfstudio.core.run_loading import load_folder, tag_kind

    run = tmp_path / "run"
    write_events(
        run,
        {
            "step/loss": [(1, 0.5), (2, 0.25)],
            "system/process/cpu_percent": [(1, 90.0), (2, 95.0)],
            "system/machine/memory_used_bytes": [(2, 1e9)],
        },
    )
    assert tag_kind("system/process/cpu_percent") is None
    store = load_folder(run)
    assert store.families() == ["loss"]  # the System view shows them, not the Metrics view
    assert store.steps["loss"].points()[1].tolist() == [0.5, 0.25]
