"""Whether a panel is in sight: hidden tabs, docks and minimised windows skip their redraws."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QScrollArea, QWidget


def out_of_sight(widget: QWidget) -> bool:
    """True when the user cannot see ``widget`` although its window is up.

    That is a tab behind another, a dock closed or tabbed behind another, or the
    whole window minimised: such a panel keeps its data and draws it when shown
    again. A widget whose window was never shown (a test, a screenshot of the
    widget alone) counts as in sight and draws as before.

    A dock tabbed behind another is not hidden by Qt, only moved out of the
    window: it stays ``isVisible()`` with an empty visible region, and its dock
    emits ``visibilityChanged(True)`` (no show event) when its tab is picked.
    """
    window = widget.window()
    if not window.isVisible():
        return False
    return window.isMinimized() or not widget.isVisible() or widget.visibleRegion().isEmpty()


def in_scroll_view(widget: QWidget, scroll: QScrollArea) -> bool:
    """Whether any of ``widget`` (inside ``scroll``'s content) lies in the scrolled view.

    Geometry, not ``visibleRegion()``: a widget with an opaque child covering it (a
    plot's viewport) has an empty visible region wherever it is. A widget not shown
    yet (a new row, a window never shown) counts as in view: it draws as before.
    """
    if not widget.isVisible():
        return True
    view = scroll.viewport()
    return QRect(widget.mapTo(view, QPoint(0, 0)), widget.size()).intersects(view.rect())
