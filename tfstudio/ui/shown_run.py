"""Reopened runs read off the GUI thread, and followed while they grow (issue 56).

:class:`PartsPump` drives the session's reader thread
(:meth:`~tfstudio.core.run_model.Session.open` with ``wait=False``): a QTimer on the
GUI thread applies the reads that finished (:meth:`Session.poll`) and redraws the
views, so a big run never pauses the window; while a reopened run whose folder is
still being written is shown (and Follow is on), it asks for it to be read again every
:data:`FOLLOW_S` (its console, system samples, checkpoints, notices, hyperparameters
and inspector samples; what was appended only).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QTimer, Signal

from tfstudio.core.run_model import RunModel, Session

READ_POLL_MS = 50  # while a read is out: its result is applied within this
FOLLOW_S = 2.0  # a followed reopened run's folder is read again this often


class View(Protocol):
    """A view that redraws what changed in the model it shows."""

    def refresh(self) -> None:
        """Redraw what changed (cheap when nothing did)."""
        ...


class PartsPump(QObject):
    """Applies the session's reads on the GUI thread; follows the shown reopened run.

    Args:
        session: the window's session.
        views: redrawn when the shown run took a read.
        follow: whether a reopened run still being written is read again (the Runs
            panel's Follow box).
        note: says what could not be read of the shown run (the console's note).
        parent: Qt parent.
    """

    read = Signal(object)  # the models that took a read (list of RunModel)

    def __init__(
        self,
        session: Session,
        views: Sequence[View] = (),
        follow: Callable[[], bool] = lambda: True,
        note: Callable[[str], None] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session
        self.views = list(views)
        self.follow = follow
        self.note = note
        self._said: dict[int, int] = {}  # id(model) -> its notes said
        self.follow_s = FOLLOW_S
        self.follows = 0  # reads asked for a followed run (for tests)
        self._follow_at = 0.0
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.tick)

    def kick(self) -> None:
        """A read went out (or the shown run changed): look again soon."""
        self._follow_at = time.monotonic() + self.follow_s
        self.timer.start(READ_POLL_MS)

    def tick(self) -> None:
        """Apply finished reads, redraw, and ask for the next read of a followed run."""
        changed = self.session.poll()
        shown = self.session.shown
        if shown in changed:
            for view in self.views:
                view.refresh()
        said = self._said.get(id(shown), 0)
        if len(shown.notes) > said and not shown.live:
            self._said[id(shown)] = len(shown.notes)
            for text in shown.notes[said:]:
                if self.note is not None:
                    self.note(text)
        if changed:
            self.read.emit(changed)
        now = time.monotonic()
        followed = self._followed(shown)
        if followed and now >= self._follow_at:
            self._follow_at = now + self.follow_s
            if self.session.follow(shown):
                self.follows += 1
        if self.session.reading():
            self.timer.start(READ_POLL_MS)
        elif followed:
            self.timer.start(max(READ_POLL_MS, int(1000 * (self._follow_at - now))))

    def _followed(self, model: RunModel) -> bool:
        return (
            not model.live
            and not model.loading
            and model.recorded_status == "running"
            and self.follow()
        )

    def wait(self, timeout_s: float = 30.0) -> bool:
        """Process events until the shown run is read (tests, screenshots); whether it was."""
        deadline = time.monotonic() + timeout_s
        while self.session.shown.loading and time.monotonic() < deadline:
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
            time.sleep(0.005)
        self.tick()
        return not self.session.shown.loading

    def stop(self) -> None:
        """Stop looking, and the session's reader thread."""
        self.timer.stop()
        self.session.shutdown()
