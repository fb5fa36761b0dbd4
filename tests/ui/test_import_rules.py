"""The UI must never pull in TensorFlow or Keras (it only reads core events)."""

from __future__ import annotations

import subprocess
import sys


def test_ui_imports_no_tensorflow():
    code = (
        "import sys, tfstudio.ui.main_window\n"
        "bad = [m for m in ('tensorflow', 'keras', 'tfstudio.engine') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
