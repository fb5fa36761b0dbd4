"""The bundled examples run without a single warning (issue 52: a new user reads Keras's
red "`shuffle=True` was passed, but will be ignored" as an error).

TensorFlow's own start-up lines (absl's "WARNING: All log messages before
absl::InitializeLog()...") are left out: they are not the example's, and the console
and ``tfstudio run`` fold them (``tfstudio.core.tf_startup``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tfstudio.core.resources import examples
from tfstudio.core.tf_startup import is_startup_line

pytestmark = pytest.mark.tf

SMALL_ARGS = {
    "linear_regression.py": ["--epochs", "1"],
    "mlp_classifier.py": ["--epochs", "1", "--samples", "300"],
    "cnn_shapes.py": ["--epochs", "1", "--samples", "64"],
    "basic_training_loop.py": [],
}


def test_every_bundled_example_is_covered():
    assert sorted(p.name for p in examples()) == sorted(SMALL_ARGS)


@pytest.mark.parametrize("name", sorted(SMALL_ARGS))
def test_example_runs_without_any_warning(name, tmp_path):
    script = next(p for p in examples() if p.name == name)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1", PYTHONWARNINGS="default")
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # as a user runs it: every message TF prints
    result = subprocess.run(
        [sys.executable, "-m", "tfstudio", "run", str(script), *SMALL_ARGS[name]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Run finished" in result.stderr
    warnings = [
        line
        for line in output.splitlines()
        if "warning" in line.lower() and not is_startup_line(line)
    ]
    assert warnings == [], "\n".join(warnings)
