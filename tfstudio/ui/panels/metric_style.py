"""Colours, pens and small helpers shared by the metric plot's modules."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QPixmapCache
from PySide6.QtWidgets import QGraphicsItem

STEP_ALPHA = 150  # raw per-step line when not smoothed
SMOOTH_WIDTH = 1.6
TRAIN = "#1f77b4"  # the live run's colour (every line of a run is in the run's colour)
EPOCH_DARKER = 160  # an epoch-mean line: the run's colour this much darker (QColor.darker)
EPOCH_LINE = "#c4c4c4"
FIT_LINE = "#6a3d9a"
LAYER_ALPHA = 230  # a compared run's line
FAINT_ALPHA = 150  # the previous run of the same script, behind the live one


def _labelled(key: str, kind: str) -> str:
    """A line's legend label: ``loss (per step)``; a key that ends in parentheses takes
    the kind inside them: ``loss (generator, per step)``, ``gradient norm (sampled, per
    step)``, not two pairs."""
    return f"{key[:-1]}, {kind})" if key.endswith(")") else f"{key} ({kind})"


PIXMAP_CACHE_KB = 64 * 1024  # Qt keeps item caches in QPixmapCache: 10 MB by default


def _cached(item: pg.PlotDataItem) -> None:
    """Paint ``item`` from a pixmap of itself while neither it nor the view changed.

    For lines that change seldom (an earlier run's, epoch means): a live curve's
    update repaints the whole data area, and these were drawn again with it. Qt
    keeps the pixmaps in ``QPixmapCache``, whose default 10 MB a maximised window
    with a few compared runs outgrows (a pixmap dropped is painted again): 64 MB.
    """
    if QPixmapCache.cacheLimit() < PIXMAP_CACHE_KB:
        QPixmapCache.setCacheLimit(PIXMAP_CACHE_KB)
    for part in (item.curve, item.scatter):
        part.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
