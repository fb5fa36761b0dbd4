"""Shared test set-up: offscreen Qt, quiet TensorFlow, helpers to run scripts."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")


@pytest.fixture(autouse=True, scope="session")
def _runs_go_to_a_temp_folder(tmp_path_factory):
    """Runs record by default; keep test runs out of the repository (subprocesses inherit it)."""
    os.environ["TFSTUDIO_LOGDIR"] = str(tmp_path_factory.mktemp("tfstudio-runs"))


@pytest.fixture
def write_script(tmp_path: Path):
    """Write a dedented script into tmp_path and return its path."""

    def write(source: str, name: str = "train.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return path

    return write


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.01):
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
