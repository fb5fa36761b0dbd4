"""The app as a user starts it: a real process, offscreen, with the automation flags."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.tf


def launch(
    *args: str, timeout: float = 180, config: Path | None = None
) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    if config is not None:  # keep the recent-files list out of the real user's settings
        env["XDG_CONFIG_HOME"] = str(config)
    return subprocess.run(
        [sys.executable, "main.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_no_argument_opens_the_default_example_and_runs_it_to_a_screenshot(tmp_path):
    shot = tmp_path / "shot.png"
    result = launch(
        "--run", "--quit-when-done", "--screenshot", str(shot), "--", "--epochs", "1",
        "--samples", "600", config=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a real, non-blank picture


def test_a_failing_script_exits_non_zero(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("raise SystemExit(5)\n")
    result = launch(str(script), "--run", "--quit-when-done", config=tmp_path)
    assert result.returncode == 5


def test_a_missing_script_exits_non_zero_at_once(tmp_path):
    result = launch(
        str(tmp_path / "nope.py"), "--run", "--quit-when-done", timeout=60, config=tmp_path
    )
    assert result.returncode == 2
