"""Colours shared by every plot."""

from __future__ import annotations

BACKGROUND = "#ffffff"
FOREGROUND = "#303030"
MUTED = "#808080"
OUTLIER = "#c92a2a"
SEGMENT_LINE = "#6a3d9a"

# Qualitative palette for overlaid segments (Tableau 10, then darker/lighter variants).
SEGMENT_PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#0b4f7a", "#b35806", "#1b6e1b", "#8e1b1b", "#5e3c8a",
    "#5a3730", "#a8478f", "#4d4d4d", "#7f7f13", "#0f7f8a",
)  # fmt: skip


def segment_colour(index: int) -> str:
    """Colour of segment ``index`` (0-based) when segments are overlaid."""
    return SEGMENT_PALETTE[index % len(SEGMENT_PALETTE)]
