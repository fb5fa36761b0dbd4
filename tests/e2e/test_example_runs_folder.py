"""A bundled example's runs are recorded in the per-user data folder, never inside the
installed package (issue 52: ``tfstudio/resources/examples/tfstudio-runs`` in a wheel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import wait_for
from tfstudio.core.channel import Channel
from tfstudio.core.events import RunEnded, RunRecording
from tfstudio.core.process import ProcessLauncher
from tfstudio.core.resources import examples
from tfstudio.core.runs import list_runs

pytestmark = pytest.mark.tf


def test_the_windows_run_of_a_bundled_example_is_recorded_in_the_user_data_folder(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("TFSTUDIO_LOGDIR", raising=False)  # the default is what is tested
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    script = next(p for p in examples() if p.name == "linear_regression.py")
    beside = script.parent / "tfstudio-runs"
    existed = beside.exists()
    channel = Channel()
    # as the window runs it: in the script's own folder
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    events: list[object] = []
    try:
        launcher.start(str(script), ["--epochs", "1"])
        wait_for(
            lambda: events.extend(channel.drain()) or any(isinstance(e, RunEnded) for e in events),
            timeout=180,
        )
    finally:
        launcher.shutdown()
    [ended] = [e for e in events if isinstance(e, RunEnded)]
    assert ended.status == "finished"
    [recording] = [e for e in events if isinstance(e, RunRecording)]
    runs = tmp_path / "data" / "tfstudio" / "runs"
    assert Path(recording.run_dir).parent == runs
    [run] = list_runs(runs)
    assert run.status == "finished" and run.steps == 20
    assert beside.exists() == existed  # nothing new beside the example
