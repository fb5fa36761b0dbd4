"""Variants for ``window_replay.py``: a y range's percentiles as they were before
2026-11-27 (fifth stop), and this tree.

``before``: the percentiles of every visible point (up to 40,000 in a long run's plot).
``after``: of an evenly strided sample of 4,096 points or more.

    python bench/window_replay.py --steps 24000 --variants bench/window_replay_old_ranges.py
"""

from __future__ import annotations

from tfstudio.ui.plotting import ranges


def before() -> None:
    """Every point sorted."""
    ranges.BULK_SAMPLE = 10**12


def after() -> None:
    """This tree."""
    ranges.BULK_SAMPLE = 4096


VARIANTS = {"before": before, "after": after}
