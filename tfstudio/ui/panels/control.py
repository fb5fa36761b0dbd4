"""Run controls: pause/resume, save a checkpoint, eager/graph, learning rate.

Owns the toolbar actions and widgets that send commands to the run (through
``launcher.send``) and follows the run's events to show its state: paused or
running, the execution mode with the trace count, the current learning rate.
No training logic: every control is a command applied by the worker at the
next batch boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QStyle,
    QWidget,
)

from tfstudio.core.commands import (
    Pause,
    Resume,
    SaveCheckpoint,
    SetExecutionMode,
    SetLearningRate,
)
from tfstudio.core.events import (
    CheckpointRestored,
    ExecutionMode,
    LearningRate,
    NonFinite,
    Notice,
    RunEnded,
    RunStarted,
    RunState,
    StepEnded,
)
from tfstudio.core.launcher import Launcher
from tfstudio.core.options import RunOptions

Confirm = Callable[[str, str], bool]
AskInt = Callable[[str, str, int], int | None]  # (title, label, current) -> value or None


def ask_int(parent: QWidget | None) -> AskInt:
    """A number in a dialog; None when cancelled (tests pass their own)."""

    def get(title: str, label: str, current: int) -> int | None:
        value, ok = QInputDialog.getInt(parent, title, label, current, 0, 2**31 - 1)
        return value if ok else None

    return get


def ask(parent: QWidget | None) -> Confirm:
    """A yes/no question in a dialog (tests pass their own ``confirm``)."""

    def confirm(title: str, text: str) -> bool:
        answer = QMessageBox.question(parent, title, text)
        return answer == QMessageBox.StandardButton.Yes

    return confirm


class ControlPanel(QObject):
    """Toolbar controls of a run and the state they show.

    Args:
        launcher: where commands go (``launcher.send``).
        parent: a widget: parent of the actions and of the toolbar widgets.
        confirm: asks the user a yes/no question (replacing an LR schedule).
    """

    state_changed = Signal()
    PAUSE_TEXTS = ("Pause", "Resume")  # what the pause button reads (its width fits both)
    notice = Signal(str)  # a short line for the status bar (retracing, refused LR change)
    console_note = Signal(str)  # a line for the console (an LR the user typed was replaced)

    EVENTS = (
        RunStarted,
        RunEnded,
        RunState,
        ExecutionMode,
        LearningRate,
        NonFinite,
        CheckpointRestored,
        Notice,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(self, launcher: Launcher, parent: QWidget, confirm: Confirm | None = None) -> None:
        super().__init__(parent)
        self.launcher = launcher
        self.confirm = confirm if confirm is not None else ask(parent)
        self.ask_int: AskInt = ask_int(parent)
        self.options = RunOptions()  # what the next run starts with
        self.running = False
        self.paused = False
        self.pause_reason = ""
        self.eager: bool | None = None  # as the run reports it; None before a fit
        self.traces = 0
        self.lr: LearningRate | None = None
        self.non_finite: NonFinite | None = None
        self.typed_lr: float | None = None  # the last rate the user set in this run
        self.replaced_lr: float | None = None  # a typed rate a Restore replaced: re-apply?
        self._restored = False  # a CheckpointRestored came: its LearningRate is next
        self._dirty = True
        icon = parent.style().standardIcon

        self.pause_action = QAction(icon(QStyle.StandardPixmap.SP_MediaPause), "Pause", parent)
        self.pause_action.setShortcut(QKeySequence("F6"))
        self.pause_action.setToolTip("Pause training at the next step; again to resume (F6)")
        self.pause_action.triggered.connect(self.toggle_pause)
        self.save_action = QAction(
            icon(QStyle.StandardPixmap.SP_DialogSaveButton), "Save checkpoint", parent
        )
        self.save_action.setShortcut(QKeySequence("Ctrl+S"))
        self.save_action.setToolTip(
            "Save the model, its optimizer and the step now (Ctrl+S), between two steps"
        )
        self.save_action.triggered.connect(self.save_checkpoint)
        self.eager_action = QAction("Eager", parent)
        self.eager_action.setCheckable(True)
        self.eager_action.setShortcut(QKeySequence("Ctrl+E"))
        self.eager_action.setToolTip(
            "Run eagerly (checked) or as a graph: live at the next step during a run, "
            "else for the next run (Ctrl+E)"
        )
        self.eager_action.toggled.connect(self._on_eager_toggled)

        self.stop_at_action = QAction("Stop at step…", parent)
        self.stop_at_action.setToolTip("End training after exactly N steps (next run; 0: off)")
        self.stop_at_action.triggered.connect(self._on_stop_at_triggered)
        self.checkpoint_every_action = QAction("Checkpoint every…", parent)
        self.checkpoint_every_action.setToolTip(
            "Save a checkpoint every N steps (next run; 0: off)"
        )
        self.checkpoint_every_action.triggered.connect(self._on_checkpoint_every_triggered)

        self.mode_label = QLabel(parent)
        self.mode_label.setObjectName("executionMode")
        self.mode_label.setToolTip("Execution mode of the running fit and how many times "
                                   "its train step was traced into a graph")  # fmt: skip
        # Room for a two-digit trace count: a retrace must not shift the LR field.
        width = self.mode_label.fontMetrics().horizontalAdvance("eager · traced 99×")
        self.mode_label.setMinimumWidth(width + 4)
        self.lr_widget = QWidget(parent)
        self.lr_edit = QLineEdit(self.lr_widget)
        self.lr_edit.setPlaceholderText("learning rate")
        self.lr_edit.setFixedWidth(110)
        self.lr_edit.setToolTip("Set the optimizer's learning rate at the next step (Enter)")
        self.lr_edit.returnPressed.connect(self._on_lr_entered)
        self.lr_button = QPushButton("Set", self.lr_widget)
        self.lr_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.lr_button.clicked.connect(self._on_lr_entered)
        self.lr_label = QLabel(self.lr_widget)
        self.reapply_button = QPushButton(self.lr_widget)
        self.reapply_button.setObjectName("reapplyLearningRate")
        self.reapply_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.reapply_button.clicked.connect(self.reapply_learning_rate)
        self.reapply_button.hide()
        layout = QHBoxLayout(self.lr_widget)
        layout.setContentsMargins(6, 0, 6, 0)
        layout.addWidget(QLabel("LR", self.lr_widget))
        layout.addWidget(self.lr_edit)
        layout.addWidget(self.lr_button)
        layout.addWidget(self.lr_label)
        layout.addWidget(self.reapply_button)
        self.lr_widget.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.refresh()

    # -- options for the next run ------------------------------------------
    def set_run_options(self, options: RunOptions) -> None:
        """Start runs with ``options`` (the command line's control flags)."""
        self.options = options
        self.eager_action.blockSignals(True)
        self.eager_action.setChecked(bool(options.eager))
        self.eager_action.blockSignals(False)
        self._dirty = True
        self.refresh()

    def _on_stop_at_triggered(self) -> None:
        value = self.ask_int("Stop at step", "End training after this many steps (0: off):",
                             self.options.stop_at_step or 0)  # fmt: skip
        if value is not None:
            self.options = replace(self.options, stop_at_step=value or None)
            self._dirty = True
            self.refresh()

    def _on_checkpoint_every_triggered(self) -> None:
        value = self.ask_int("Checkpoint every", "Save a checkpoint every N steps (0: off):",
                             self.options.checkpoint_every)  # fmt: skip
        if value is not None:
            self.options = replace(self.options, checkpoint_every=value)
            self._dirty = True
            self.refresh()

    # -- commands ------------------------------------------------------------
    def toggle_pause(self) -> None:
        """Pause a running training, resume a paused one."""
        if not self.running:
            return
        self.launcher.send(Resume() if self.paused else Pause())

    def save_checkpoint(self) -> None:
        """Ask the run to save a checkpoint now."""
        if self.running:
            self.launcher.send(SaveCheckpoint())

    def _on_eager_toggled(self, eager: bool) -> None:
        self.options = replace(self.options, eager=eager)
        if self.running:
            self.launcher.send(SetExecutionMode(eager))
        self._dirty = True
        self.refresh()

    def set_learning_rate(self, value: float) -> bool:
        """Send a new learning rate; a schedule is replaced only if the user confirms."""
        if not self.running:
            self.options = replace(self.options, lr=value)
            return True
        replace_schedule = False
        if self.lr is not None and self.lr.is_schedule:
            replace_schedule = self.confirm(
                "Replace the learning-rate schedule?",
                f"The learning rate comes from a schedule ({self.lr.schedule}). Replace it "
                f"with the constant {value:g} for the rest of this run?",
            )
            if not replace_schedule:
                return False
        self.launcher.send(SetLearningRate(value, replace_schedule=replace_schedule))
        self.typed_lr = value
        self.replaced_lr = None
        self._dirty = True
        self.refresh()
        return True

    def reapply_learning_rate(self) -> bool:
        """Send again the rate the user typed before a Restore replaced it."""
        value = self.replaced_lr
        if value is None or not self.running:
            return False
        return self.set_learning_rate(value)

    def _on_lr_entered(self) -> None:
        text = self.lr_edit.text().strip()
        try:
            value = float(text)
        except ValueError:
            self.lr_edit.setToolTip(f"Expected a number such as 1e-3; got {text!r}")
            self.lr_edit.setStyleSheet("QLineEdit { border: 1px solid #c62828; }")
            return
        self.lr_edit.setStyleSheet("")
        if value <= 0 or value != value:
            self.lr_edit.setStyleSheet("QLineEdit { border: 1px solid #c62828; }")
            return
        if self.set_learning_rate(value):
            self.lr_edit.clear()

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Steps change nothing shown here."""

    def ingest_event(self, event: object) -> None:
        """Follow the run's state, execution mode and learning rate."""
        changed = True
        if isinstance(event, RunStarted):
            self.running, self.paused, self.pause_reason = True, False, ""
            self.eager, self.traces, self.lr, self.non_finite = None, 0, None, None
            self.typed_lr, self.replaced_lr, self._restored = None, None, False
        elif isinstance(event, RunEnded):
            self.running, self.paused = False, False
            self.replaced_lr = None
        elif isinstance(event, RunState):
            self.paused = event.state == "paused"
            self.pause_reason = event.reason if self.paused else ""
        elif isinstance(event, ExecutionMode):
            self.eager, self.traces = event.eager, event.traces
        elif isinstance(event, LearningRate):
            self.lr = event
            self._follow_learning_rate(event)
        elif isinstance(event, NonFinite):
            self.non_finite = event
        elif isinstance(event, CheckpointRestored):
            self.non_finite = None
            self._restored = True
            if self.paused:
                self.pause_reason = f"restored step {event.step}: Resume continues from it"
        elif isinstance(event, Notice):
            first = event.text.split(". ")[0].rstrip(".")
            self.notice.emit(f"{'TensorFlow retracing' if event.kind == 'retracing' else 'Note'}: "
                             f"{first}.")  # fmt: skip
            return
        else:
            changed = False
        if changed:
            self._dirty = True
            if not isinstance(event, LearningRate | ExecutionMode):
                self.state_changed.emit()

    def forget_run(self) -> None:
        """Another script was opened: the last run's mode, trace count and rate go."""
        if self.running:
            return
        self.paused, self.pause_reason = False, ""
        self.eager, self.traces, self.lr, self.non_finite = None, 0, None, None
        self.typed_lr, self.replaced_lr, self._restored = None, None, False
        self._dirty = True
        self.refresh()

    def _follow_learning_rate(self, event: LearningRate) -> None:
        """After a Restore, tell the user when the checkpoint's rate replaced the typed one."""
        if self.replaced_lr is not None and _same_rate(event.value, self.replaced_lr):
            self.replaced_lr = None  # re-applied
            self.typed_lr = event.value
        if not self._restored:
            return
        self._restored = False
        typed = self.typed_lr
        if typed is None or _same_rate(event.value, typed):
            return
        self.replaced_lr = typed
        self.console_note.emit(
            f"The restored checkpoint brought its own learning rate ({event.value:.3g}); the "
            f"{typed:g} you set was replaced. Press 'Re-apply {typed:g}' beside the LR field "
            "to set it again."
        )

    def refresh(self) -> None:
        """Update labels and enabled states if anything changed."""
        if not self._dirty:
            return
        self._dirty = False
        style = self.pause_action.parent().style()
        if self.paused:
            self.pause_action.setText("Resume")
            self.pause_action.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_MediaPlay))
        else:
            self.pause_action.setText("Pause")
            self.pause_action.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_MediaPause))
        self.pause_action.setEnabled(self.running)
        self.save_action.setEnabled(self.running)
        stop_at = self.options.stop_at_step
        self.stop_at_action.setText(f"Stop at step {stop_at}…" if stop_at else "Stop at step…")
        every = self.options.checkpoint_every
        self.checkpoint_every_action.setText(
            f"Checkpoint every {every} steps…" if every else "Checkpoint every…"
        )
        # the toggle shows what the label says: the run's mode, else the next run's
        eager = self.eager if self.eager is not None else bool(self.options.eager)
        if self.eager_action.isChecked() != eager:
            self.eager_action.blockSignals(True)
            self.eager_action.setChecked(eager)
            self.eager_action.blockSignals(False)
        mode = "eager" if eager else "graph"
        traces = f" · traced {self.traces}×" if self.traces else ""
        self.mode_label.setText(f"{mode}{traces}")
        if self.lr is None:
            self.lr_label.setText(f"next run: {self.options.lr:g}" if self.options.lr else "")
        else:
            kind = f" ({self.lr.schedule})" if self.lr.is_schedule else ""
            restored = " (restored)" if self.replaced_lr is not None else ""
            self.lr_label.setText(f"{self.lr.value:.3g}{kind}{restored}")
        replaced = self.replaced_lr
        self.reapply_button.setVisible(replaced is not None and self.running)
        if replaced is not None:
            self.reapply_button.setText(f"Re-apply {replaced:g}")
            self.reapply_button.setToolTip(
                f"The restored checkpoint replaced the learning rate you set ({replaced:g}) "
                "with its own: set it again from the next step"
            )
            self.lr_label.setToolTip(
                "The learning rate restored with the checkpoint's optimizer; "
                f"you had set {replaced:g}"
            )
        else:
            self.lr_label.setToolTip("")

    # -- public ------------------------------------------------------------
    def state(self) -> str:
        """``"paused"`` while the run is held, else ``""``."""
        return "paused" if self.running and self.paused else ""

    def state_detail(self) -> str:
        """Why the run is paused, for the status bar."""
        if self.non_finite is not None and self.paused:
            nf = self.non_finite
            where = f" in {nf.layer}" if nf.layer else ""
            return f"NaN at step {nf.global_step}{where}"
        return "" if self.pause_reason in ("", "user") else self.pause_reason


def _same_rate(a: float, b: float) -> bool:
    """Learning rates travel as float32 in the optimizer: compare them at that precision."""
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))
