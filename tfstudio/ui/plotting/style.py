"""Colours shared by every plot."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

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


LIVE_COLOUR = "#1f77b4"  # the live run (and a run on show that has no swatch)
# Picked runs' colours, by their place among the picked (the live run keeps blue).
RUN_COLOURS = (
    "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#1f77b4",
)  # fmt: skip
NAME_SEPARATORS = "-_ ./"


@dataclass(frozen=True, slots=True)
class RunStyle:
    """How a run is drawn and named wherever it shows: its Runs-table swatch, every line
    of it in the metric plots (per step, epoch mean and val alike, in this colour), its
    legend entry and readout row.

    Args:
        name: the run's name (the legend shortens it, see :func:`short_names`).
        colour: its colour.
        faint: drawn fainter (the script's previous run, behind the live one).
    """

    name: str
    colour: str
    faint: bool = False


def picked_style(index: int, name: str) -> RunStyle:
    """The style of the ``index``-th picked run (0-based): its colour by its place."""
    return RunStyle(name, RUN_COLOURS[index % len(RUN_COLOURS)])


def short_names(names: Sequence[str]) -> list[str]:
    """``names`` without the start they all share, cut back to a separator
    (``mlp-20261203-194512``, ``mlp-20261203-194601`` -> ``194512``, ``194601``);
    as they are when fewer than two, or when that would leave one empty."""
    names = list(names)
    if len(set(names)) < 2:  # one name (or every name the same): nothing to tell apart
        return names
    prefix = os.path.commonprefix(names)
    cut = max(prefix.rfind(s) for s in NAME_SEPARATORS) + 1
    if cut <= 0:
        return names
    short = [n[cut:] for n in names]
    return names if not all(short) else short
