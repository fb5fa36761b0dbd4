"""Numbers and durations as people read them in status lines."""

from __future__ import annotations

import math


def format_duration(seconds: float | None) -> str:
    """``1:02:03`` / ``2:03`` style duration, ``--`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "--"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def format_value(value: float | None) -> str:
    """Compact number for status lines: 4 significant digits."""
    if value is None:
        return "--"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"
