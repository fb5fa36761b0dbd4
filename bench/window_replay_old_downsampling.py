"""Variants for ``window_replay.py``: pyqtgraph's peak downsampling as it was before
2026-11-27 (five min/max pairs per pixel column, its default) and this tree's one pair.

    python bench/window_replay.py --steps 24000 --variants bench/window_replay_old_downsampling.py
"""

from __future__ import annotations

from tfstudio.ui.plotting import curve


def before() -> None:
    """pyqtgraph's default: five pairs a pixel."""
    curve.PEAK_PAIRS_PER_PX = 5.0


def after() -> None:
    """This tree."""
    curve.PEAK_PAIRS_PER_PX = 1.0


VARIANTS = {"before": before, "after": after}
