"""Standing checks that run with the tests: lint, format, and the layer contracts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_ruff_check():
    result = _run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format():
    result = _run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_layers():
    """core imports no TF/Qt, engine no Qt, ui no TF/Keras (docs/architecture.md, "Layers")."""
    beside = Path(sys.executable).parent / "lint-imports"  # this environment's, if any
    exe = str(beside) if beside.exists() else shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports is missing: pip install -e '.[test]'")
    result = _run(exe)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout
