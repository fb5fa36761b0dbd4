"""Variants for ``window_replay.py``: the status bar laid out by a ``QHBoxLayout`` (as
before 2026-11-27's fourth stop, commit 99980dd) against this tree's own placing.

    python bench/window_replay.py --variants bench/window_replay_old_status.py
"""

from __future__ import annotations

import subprocess
import types
from pathlib import Path

from tfstudio.ui import main_window
from tfstudio.ui.panels import status

ROOT = Path(__file__).resolve().parents[1]
OLD = "99980dd"  # the last commit whose status panel had a layout

_source = subprocess.run(
    ["git", "show", f"{OLD}:tfstudio/ui/panels/status.py"],
    cwd=ROOT,
    capture_output=True,
    text=True,
    check=True,
).stdout
_old = types.ModuleType("status_before")
exec(compile(_source, f"{OLD}:status.py", "exec"), _old.__dict__)


def before() -> None:
    """The status panel with a layout."""
    main_window.StatusPanel = _old.StatusPanel


def after() -> None:
    """This tree's."""
    main_window.StatusPanel = status.StatusPanel


VARIANTS = {"after": after, "before": before}
