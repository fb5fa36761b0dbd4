"""Do something once a window is on screen: after its first expose and the paint it brings.

The window's launch uses it to start work that would compete with the first paint
for the CPU (the spare worker that imports TensorFlow): the user sees the window
first. A window that is never exposed (hidden, minimised at once) still gets the
work done after ``fallback_ms``.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QWindow
from PySide6.QtWidgets import QWidget

FALLBACK_MS = 3000


class _FirstExpose(QObject):
    def __init__(self, widget: QWidget, callback: Callable[[], None]) -> None:
        super().__init__(widget)  # lives as long as the widget, or until it fires
        self._callback = callback
        self._fired = False
        self._handle: QWindow | None = widget.windowHandle()
        if self._handle is not None:
            self._handle.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if (
            event.type() == QEvent.Type.Expose
            and isinstance(watched, QWindow)
            and watched.isExposed()
        ):
            QTimer.singleShot(0, self.fire)  # queued behind the paint this expose brings
        return False

    def fire(self) -> None:
        if self._fired:
            return
        self._fired = True
        if self._handle is not None:
            self._handle.removeEventFilter(self)
        self._callback()


def after_first_paint(
    widget: QWidget, callback: Callable[[], None], fallback_ms: int = FALLBACK_MS
) -> None:
    """Call ``callback`` once, on the GUI thread, when ``widget`` (shown, top-level) has
    been exposed and painted; at the latest ``fallback_ms`` after this call."""
    waiter = _FirstExpose(widget, callback)
    QTimer.singleShot(fallback_ms, waiter, waiter.fire)
