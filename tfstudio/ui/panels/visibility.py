"""Whether a panel is in sight: hidden tabs, docks and minimised windows skip their redraws."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget


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
