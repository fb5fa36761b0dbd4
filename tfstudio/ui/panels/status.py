"""Status-bar contents: run state, epoch, step, speed, ETA, loss and a progress bar.

The texts are the progress part of the run model shown (``model.progress``,
``model.devices``): the live run's as its events come, or a reopened run's where it
ended. The state is the shown run's too: a reopened run's as its folder says
("finished — run 'X' (recorded)", "reading… — run 'X'" while it is read), and while a
live run goes on meanwhile a link says so ("live run running: show it").
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QProgressBar, QWidget

from tfstudio.core.events import (
    DeviceMemory,
    RunDevices,
    RunStarted,
    StepColumns,
    StepEnded,
)
from tfstudio.core.progress import Progress, ProgressTracker, format_duration, format_value
from tfstudio.core.run_model import PROGRESS_EVENTS, RunModel
from tfstudio.core.system import format_bytes

MARGIN = 6  # px left and right of the panel's contents
SPACING = 14  # px between two of them
MIN_LABEL_W = 24  # a progress text gives way down to this when the bar is short of room

# state -> (text shown, colour)
STATES: dict[str, tuple[str, str]] = {
    "idle": ("idle", "#6b6b6b"),
    "loading": ("loading TensorFlow…", "#b26b00"),
    "ready": ("ready", "#2e7d32"),
    "starting": ("starting…", "#1f5fbf"),
    "running": ("running", "#1f5fbf"),
    "paused": ("paused", "#7b1fa2"),
    "stopping": ("stopping…", "#b26b00"),
    "stopped": ("stopped", "#b26b00"),
    "finished": ("finished", "#2e7d32"),
    "failed": ("failed", "#c62828"),
    "error": ("error", "#c62828"),
    "interrupted": ("interrupted", "#b26b00"),  # a recorded run whose writer is gone
    "reading": ("reading…", "#b26b00"),  # a reopened run read from its folder
    "recorded": ("recorded", "#6b6b6b"),  # a folder that says no state (TensorBoard's)
}
# The live run's states in which it goes on while a reopened run is shown.
LIVE_GOING = ("starting", "running", "paused", "stopping", "loading")


class StatusPanel(QWidget):
    """The permanent part of the window's status bar, redrawn at most once per frame.

    The panel places its texts itself, without a ``QLayout``: a label's ``setText``
    asks its parent's layout to lay out again, and the step count changes at every
    redraw; through the status bar that re-laid-out the whole main window each time
    (2.0 ms of the window's ~33 ms per redraw). Here a
    text's room only grows during a run (so the texts also stay where they are), and
    the panel is placed again only when a room or the panel's size changed.

    Args:
        parent: Qt parent.
        model: the run shown (the window's session gives it and feeds it; :meth:`show_model`
            changes it); None: one of the panel's own, fed by the panel (a panel used alone).
    """

    show_live_requested = Signal()  # the hint's link: show the live run again

    EVENTS = PROGRESS_EVENTS  # the kinds the bridge hands ingest_event / ingest_steps

    def __init__(self, parent: QWidget | None = None, model: RunModel | None = None) -> None:
        super().__init__(parent)
        self._own = model is None  # a panel used alone feeds a model of its own
        self.model = model if model is not None else RunModel(live=True)
        self.state = "idle"
        self.state_label = QLabel(self)
        self.state_label.setObjectName("state")
        # the live run's state while a reopened run is shown: a link back to it
        self.live_hint = QLabel(self)
        self.live_hint.setTextFormat(Qt.TextFormat.RichText)
        self.live_hint.setToolTip("Show the live run in every view")
        self.live_hint.linkActivated.connect(lambda _link: self.show_live_requested.emit())
        self._live_state: tuple[str, str] = ("idle", "")  # the window's, for the live run
        self._shown_state: tuple[object, ...] = ()  # what the state label was drawn from
        self.epoch_label = QLabel(self)
        self.step_label = QLabel(self)
        self.rate_label = QLabel(self)
        self.eta_label = QLabel(self)
        self.loss_label = QLabel(self)
        self.device_label = QLabel(self)
        self.device_label.setObjectName("device")
        self.progress_bar = QProgressBar(self)
        self.progress_bar.setRange(0, 100)
        self.progress_bar.setFixedWidth(160)
        self.progress_bar.setTextVisible(True)
        self.progress_bar.setFormat("")
        for label in (self.epoch_label, self.step_label, self.rate_label, self.eta_label):
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # room (px) each text has been given this run; it only grows until the next run
        self._room: dict[QLabel, int] = dict.fromkeys(self._giving_way(), 0)
        self._placed: tuple | None = None  # (width, height, parts) when last placed
        self._hints: dict[QLabel, tuple[str, int]] = {}
        self._dirty = True
        self._read_at: tuple[int, int] = (-1, -1)  # a reopened run's revisions drawn at
        self._explained = ""  # the tooltip that says what a restore did to the counts
        self.set_state("idle")
        self.refresh()

    @property
    def tracker(self) -> ProgressTracker:
        """The shown run's progress (its model's)."""
        return self.model.progress_tracker

    @property
    def devices(self) -> RunDevices | None:
        """The devices the shown run computes on."""
        return self.model.devices

    @property
    def device_memory(self) -> DeviceMemory | None:
        """TensorFlow's newest memory figures of the shown run."""
        return self.model.device_memory

    def show_model(self, model: RunModel) -> None:
        """Show ``model``'s progress (the live run's, or a reopened run's)."""
        if model is not self.model:
            self.model = model
            self._dirty = True
            self.refresh()
            self._show_state()

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """A run of steps: the model moved (a panel used alone feeds its own)."""
        if self._own:
            self.model.apply([steps] if type(steps) is StepColumns else steps)
        self._dirty = True

    def ingest_event(self, event: object) -> None:
        """Follow fits and epochs; a new run starts from zero."""
        if isinstance(event, RunStarted):
            self._room = dict.fromkeys(self._room, 0)  # the texts fit the next run's
        if self._own:
            self.model.apply((event,))
        self._dirty = True

    def refresh(self) -> None:
        """Redraw the progress texts if anything changed."""
        model = self.model
        if not model.live:
            read = (model.metrics.revision, model.revision("progress"))
            if read != self._read_at:
                self._read_at = read  # a reopened run read on (or read at last)
                self._dirty = True
                self._show_state()
        if not self._dirty:
            return
        self._dirty = False
        p = self.model.progress  # (a reopened run's read from its metrics)
        started = p.fit_index >= 0
        texts = ("", "", "", "", "")
        if started:
            total = f"/{p.steps_per_epoch}" if p.steps_per_epoch else ""
            every = f" (every {p.steps_per_execution} steps)" if p.steps_per_execution > 1 else ""
            restored = p.restore_note()  # after a restore: the run's step beside Keras's
            texts = (
                f"epoch {p.epoch}/{p.epochs}" if p.epochs else "",
                f"step {p.step}{total}{every}" + (f" · {restored}" if restored else ""),
                _rate_text(p),
                f"ETA {format_duration(p.eta)}"
                if p.eta is not None or (p.epochs and not p.ended)
                else "",
                f"{p.loss_key or 'loss'} {format_value(p.loss)}",
            )
        labels = (
            self.epoch_label,
            self.step_label,
            self.rate_label,
            self.eta_label,
            self.loss_label,
        )
        for label, text in zip(labels, texts, strict=True):
            if label.text() != text:
                label.setText(text)
        explained = p.restore_explanation() if started else ""
        if explained != self._explained:  # what a restore did to the counts (docs/controls.md)
            self._explained = explained
            for label in (self.epoch_label, self.step_label, self.progress_bar):
                label.setToolTip(explained)
        device = self.device_text()
        if self.device_label.text() != device:
            self.device_label.setText(device)
            self.device_label.setToolTip(self._device_tooltip())
        fraction = p.fraction()
        shown = started and fraction is not None  # a loop, or epochs of unknown length: no bar
        if self.progress_bar.isVisibleTo(self) != shown:
            self.progress_bar.setVisible(shown)
        value = int(100 * fraction) if fraction is not None else 0
        text = f"{100 * fraction:.0f}%" if fraction is not None else ""
        bar = self.progress_bar
        if value != bar.value() or text != bar.format():
            # QProgressBar.setValue repaints at once (a paint and a flush of its own, 1-2 ms
            # a redraw in the window): with updates off it is painted with the rest.
            bar.setUpdatesEnabled(False)
            bar.setValue(value)
            bar.setFormat(text)
            bar.setUpdatesEnabled(True)
            bar.update()
        self._place()

    def device_text(self) -> str:
        """``GPU 0: NVIDIA H100 · 12.3 GiB`` (TensorFlow's memory in use), ``CPU``, or ""."""
        if self.devices is None:
            return ""
        text = self.devices.describe()
        mem = self.device_memory
        if mem is not None:
            text += f" · {format_bytes(sum(mem.current))}"
        return text

    def _device_tooltip(self) -> str:
        mem = self.device_memory
        if mem is None:
            return "The device the run computes on"
        lines = [
            f"{name}: {format_bytes(cur)} in use by TensorFlow, peak {format_bytes(peak)}"
            for name, cur, peak in zip(mem.devices, mem.current, mem.peak, strict=False)
        ]
        return "\n".join(lines)

    def _progress_labels(self) -> tuple[QLabel, ...]:
        return (self.epoch_label, self.step_label, self.rate_label, self.eta_label, self.loss_label)

    # -- public ------------------------------------------------------------
    def reset(self) -> None:
        """Forget the run shown: no epoch, step, speed, loss or device (a new run starts,
        or another script was opened). The state text is the window's to set."""
        if self._own:
            self.model = RunModel(live=True)
        self._room = dict.fromkeys(self._room, 0)  # the texts fit the next run's
        self._dirty = True
        self.refresh()

    def set_state(self, state: str, detail: str = "") -> None:
        """The live run's state (one of :data:`STATES`), with optional detail text: shown
        while the live run is; with a reopened run shown, the hint beside its state."""
        self.state = state
        self._live_state = (state, detail)
        self._show_state()

    def _show_state(self) -> None:
        """The state label: the shown run's state; the hint: the live run's, when it goes on
        while a reopened run is shown."""
        model = self.model
        live_state, live_detail = self._live_state
        if model.live:
            state, detail, hint = live_state, live_detail, ""
        else:
            name = model.name or "this run"
            if model.loading:
                state, detail = "reading", f"run '{name}'"
            else:
                status = model.recorded_status
                if model.metrics.ended is not None and status in ("", "unknown", "running"):
                    status = model.metrics.ended.status
                state = status if status in STATES else "recorded"
                detail = f"run '{name}' (recorded" + (
                    ", still being written)" if status == "running" else ")"
                )
            hint = ""
            if live_state in LIVE_GOING:
                live = STATES.get(live_state, (live_state, ""))[0].rstrip("…")
                hint = f'<a href="live">live run {live}: show it</a>'
        drawn = (state, detail, hint)
        if drawn == self._shown_state:
            return
        self._shown_state = drawn
        text, colour = STATES.get(state, (state, "#6b6b6b"))
        shown = f"{text} — {detail}" if detail else text
        self.state_label.setText(shown)
        self.state_label.setToolTip(shown)
        self.state_label.setStyleSheet(
            f"QLabel#state {{ color: white; background: {colour}; border-radius: 3px;"
            " padding: 1px 8px; font-weight: bold; }"
        )
        self.live_hint.setText(hint)
        self.live_hint.setVisible(bool(hint))
        self._place()

    def hint_text(self) -> str:
        """The live run's hint as plain text ("" when none is shown)."""
        return self.live_hint.text().replace('<a href="live">', "").replace("</a>", "")

    # -- placing -----------------------------------------------------------
    def _giving_way(self) -> tuple[QLabel, ...]:
        """The texts that give way (clipped) when room runs short, never the state."""
        return (*self._progress_labels(), self.device_label)

    def _parts(self) -> list[tuple[QWidget, int]]:
        """The shown parts, left to right, with the width each would like."""
        parts: list[tuple[QWidget, int]] = []
        for label in self._giving_way():
            if label.text():
                room = max(self._room[label], self._hint(label))
                self._room[label] = room
                parts.append((label, room))
        if self.progress_bar.isVisibleTo(self):
            parts.append((self.progress_bar, self.progress_bar.width()))
        parts.append((self.state_label, self.state_label.sizeHint().width()))  # styled: asked
        if self.live_hint.text():
            parts.append((self.live_hint, self.live_hint.sizeHint().width()))
        return parts

    def _hint(self, label: QLabel) -> int:
        """The width ``label`` would like for its text (asked of Qt once per text)."""
        text = label.text()
        known = self._hints.get(label)
        if known is None or known[0] != text:
            known = self._hints[label] = (text, label.sizeHint().width())
        return known[1]

    def _wanted_width(self, parts: list[tuple[QWidget, int]]) -> int:
        return 2 * MARGIN + sum(w for _, w in parts) + SPACING * max(0, len(parts) - 1)

    def _height(self) -> int:
        return max(self.state_label.sizeHint().height(), self.progress_bar.sizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        """Room for every shown part at the width it would like."""
        return QSize(self._wanted_width(self._parts()), self._height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        """The texts down to :data:`MIN_LABEL_W`; the bar and the state whole."""
        least = [(p, MIN_LABEL_W if p in self._room else w) for p, w in self._parts()]
        return QSize(self._wanted_width(least), self._height())

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        """A new font or style: the texts' widths are asked of Qt again."""
        super().changeEvent(event)
        if not hasattr(self, "_hints"):
            return  # still in __init__
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._hints.clear()
            self._placed = None
            self._place()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        """Place the parts in the new size."""
        super().resizeEvent(event)
        self._place()

    def _place(self) -> None:
        """Give each shown part its room, left to right, when a room or the size changed.

        Room to spare is shared out among the texts (the state stays at the right end);
        short of room, the texts give way in proportion (down to :data:`MIN_LABEL_W`);
        the status bar hears of a new size hint only when the parts' rooms changed (a
        text that needs more than before, a part shown or hidden).
        """
        parts = self._parts()
        wanted = self._wanted_width(parts)
        placed = (self.width(), self.height(), tuple((id(p), w) for p, w in parts))
        if placed == self._placed:
            return
        hint_changed = self._placed is None or placed[2] != self._placed[2]
        self._placed = placed
        short = max(0, wanted - self.width())
        give = sum(w - MIN_LABEL_W for p, w in parts if p in self._room and w > MIN_LABEL_W)
        texts = sum(1 for p, _ in parts if p in self._room)
        spare = max(0, self.width() - wanted) // max(1, texts)  # shared out, as a layout did
        x = MARGIN
        for part, width in parts:
            if part in self._room:
                width += spare
            if short and part in self._room and width > MIN_LABEL_W and give > 0:
                width -= round(short * (width - MIN_LABEL_W) / give)
            height = min(self.height(), part.sizeHint().height())
            part.setGeometry(x, (self.height() - height) // 2, max(0, width), height)
            x += width + SPACING
        for label in self._giving_way():
            if not label.text():
                label.setGeometry(0, 0, 0, 0)
        if hint_changed:
            self.updateGeometry()  # the status bar gives the panel its new size hint

    def state_text(self) -> str:
        """The state label's text."""
        return self.state_label.text()

    def summary(self) -> str:
        """Every visible text of the panel in one line (for tests and logs)."""
        parts = [
            self.state_label.text(),
            self.hint_text(),
            self.epoch_label.text(),
            self.step_label.text(),
            self.rate_label.text(),
            self.eta_label.text(),
            self.loss_label.text(),
            self.device_label.text(),
        ]
        return "  ".join(p for p in parts if p)


def _rate_text(p: Progress) -> str:
    """Steps/s, or where training is held: a paused run has no speed."""
    if p.paused:
        return f"paused at step {p.global_step:,}"
    if p.rate:
        return f"{p.rate:,.0f} steps/s"
    return "" if p.ended else "-- steps/s"  # (an ended run's rate, unmeasured: none)
