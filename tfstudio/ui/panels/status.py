"""Status-bar contents: run state, epoch, step, speed, ETA, loss and a progress bar."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from tfstudio.core.events import (
    CheckpointRestored,
    DeviceMemory,
    EpochEnded,
    FitEnded,
    FitStarted,
    RunDevices,
    RunEnded,
    RunStarted,
    RunState,
    StepEnded,
)
from tfstudio.core.progress import Progress, ProgressTracker, format_duration, format_value
from tfstudio.core.system import format_bytes

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
}


class StatusPanel(QWidget):
    """The permanent part of the window's status bar, redrawn at most once per frame.

    Args:
        parent: Qt parent.
    """

    EVENTS = (
        StepEnded,
        RunStarted,
        RunDevices,
        DeviceMemory,
        FitStarted,
        EpochEnded,
        FitEnded,
        RunState,
        CheckpointRestored,
        RunEnded,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tracker = ProgressTracker()
        self.state = "idle"
        self.state_label = QLabel(self)
        self.state_label.setObjectName("state")
        self.epoch_label = QLabel(self)
        self.step_label = QLabel(self)
        self.rate_label = QLabel(self)
        self.eta_label = QLabel(self)
        self.loss_label = QLabel(self)
        self.device_label = QLabel(self)
        self.device_label.setObjectName("device")
        self.devices: RunDevices | None = None
        self.device_memory: DeviceMemory | None = None
        self.progress_bar = QProgressBar(self)
        self.progress_bar.setRange(0, 100)
        self.progress_bar.setFixedWidth(160)
        self.progress_bar.setTextVisible(True)
        self.progress_bar.setFormat("")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 6, 0)
        layout.setSpacing(14)
        for label in (self.epoch_label, self.step_label, self.rate_label, self.eta_label):
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(label)
        for label in self._progress_labels():
            # When space runs short these give way (clipped), never the state label.
            label.setMinimumWidth(24)
        layout.addWidget(self.loss_label)
        self.device_label.setMinimumWidth(24)
        layout.addWidget(self.device_label)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.state_label)
        self._dirty = True
        self.set_state("idle")
        self.refresh()

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Fold a run of steps in; only the newest one matters for what is shown."""
        if self.tracker.wants_first_step and len(steps) > 1:
            self.tracker.feed(steps[0])  # the rate counts from the first step (a fit's trace)
        self.tracker.feed(steps[-1])
        self._dirty = True

    def ingest_event(self, event: object) -> None:
        """Follow fits and epochs; a new run starts from zero."""
        if isinstance(event, RunStarted):
            self.tracker = ProgressTracker()
            self.devices, self.device_memory = None, None
            self._dirty = True
        elif isinstance(event, RunDevices):
            self.devices = event
            self._dirty = True
        elif isinstance(event, DeviceMemory):
            if event.available:
                self.device_memory = event
                self._dirty = True
        elif isinstance(
            event, FitStarted | EpochEnded | FitEnded | RunState | CheckpointRestored | RunEnded
        ):
            self.tracker.feed(event)
            self._dirty = True

    def refresh(self) -> None:
        """Redraw the progress texts if anything changed."""
        if not self._dirty:
            return
        self._dirty = False
        p = self.tracker.progress
        started = p.fit_index >= 0
        texts = ("", "", "", "", "")
        if started:
            total = f"/{p.steps_per_epoch}" if p.steps_per_epoch else ""
            every = f" (every {p.steps_per_execution} steps)" if p.steps_per_execution > 1 else ""
            texts = (
                f"epoch {p.epoch}/{p.epochs}" if p.epochs else "",
                f"step {p.step}{total}{every}",
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
            if label.text() != text:  # setText re-lays-out the status bar: only on change
                label.setText(text)
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
    def set_state(self, state: str, detail: str = "") -> None:
        """Show the run's state (one of :data:`STATES`), with optional detail text."""
        text, colour = STATES.get(state, (state, "#6b6b6b"))
        self.state = state
        shown = f"{text} — {detail}" if detail else text
        self.state_label.setText(shown)
        self.state_label.setToolTip(shown)
        self.state_label.setStyleSheet(
            f"QLabel#state {{ color: white; background: {colour}; border-radius: 3px;"
            " padding: 1px 8px; font-weight: bold; }"
        )

    def state_text(self) -> str:
        """The state label's text."""
        return self.state_label.text()

    def summary(self) -> str:
        """Every visible text of the panel in one line (for tests and logs)."""
        parts = [
            self.state_label.text(),
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
    return f"{p.rate:,.0f} steps/s" if p.rate else "-- steps/s"
