"""Notices panel: the advisor's findings, static (when a script is opened) and live (during a run).

Each notice shows its title and ``file:line``; selecting one shows the explanation,
the fix and the script's source around that line. "Open in editor" hands the file
to the desktop's editor (``QDesktopServices``).

What a run found (the live advisor's findings and the engine's notices, such as
TensorFlow's retracing warnings) is the notices part of the run model shown: the
live run's, or a reopened run's as its folder recorded them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.events import Advice, Notice, RunStarted, StepEnded
from tfstudio.core.run_model import RunModel

CONTEXT_LINES = 3
LIVE_COLOR = QColor("#b35900")


class NoticesPanel(QWidget):
    """A list of advice (static first, then the run's as it arrives) and the selected one's
    details.

    Args:
        parent: Qt parent.
        model: the run shown (the window's session gives it and feeds it; :meth:`show_model`
            changes it); None: one of the panel's own, fed by the panel.
    """

    count_changed = Signal(int)

    EVENTS = (
        Advice,
        Notice,
        RunStarted,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(self, parent: QWidget | None = None, model: RunModel | None = None) -> None:
        super().__init__(parent)
        self._static: list[Advice] = []
        self._own = model is None  # a panel used alone feeds a model of its own
        self.model = model if model is not None else RunModel(live=True)
        self._dirty = False
        self._read_at = -1  # a reopened run's notices revision when listed

        self.list = QListWidget(self)
        self.list.setObjectName("noticesList")
        self.list.currentRowChanged.connect(self._show)
        self.detail = QTextBrowser(self)
        self.detail.setObjectName("noticeDetail")
        self.detail.setOpenLinks(False)
        self.open_button = QPushButton("Open in editor", self)
        self.open_button.setToolTip("Open the script in the desktop's editor for .py files")
        self.open_button.clicked.connect(self.open_selected)
        self.open_button.setEnabled(False)
        self.summary = QLabel("No notices.", self)

        right = QWidget(self)
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.detail, 1)
        row = QHBoxLayout()
        row.addWidget(self.summary, 1)
        row.addWidget(self.open_button)
        rl.addLayout(row)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.list)
        split.addWidget(right)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(split)

    # -- content ----------------------------------------------------------
    @property
    def _live(self) -> list[Advice]:
        """The shown run's findings, then its notices (as advice without a fix)."""
        return [*self.model.advice, *(_as_advice(n) for n in self.model.notices)]

    def show_model(self, model: RunModel) -> None:
        """List ``model``'s findings (the live run's, or a reopened run's)."""
        if model is not self.model:
            self.model = model
            self._rebuild()

    def notices(self) -> list[Advice]:
        """Everything listed, in order: static advice, then live."""
        return [*self._static, *self._live]

    def set_static(self, findings: Sequence[Advice]) -> None:
        """Replace the static advice (a script was opened); live advice is kept."""
        self._static = list(findings)
        self._rebuild()

    def start_over(self, findings: Sequence[Advice]) -> None:
        """A script was opened: its static advice, and none from an earlier run."""
        self._static = list(findings)
        if self._own:
            self.model = RunModel(live=True)
        self._rebuild()

    def add(self, advice: Advice) -> None:
        """Add one live notice (a repeat of one already listed is ignored)."""
        if advice in self._static:
            return
        self.model.apply((advice,))  # (a repeat is listed once)
        self._dirty = True

    # -- bridge panel protocol ----------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Steps carry no advice."""

    def ingest_event(self, event: object) -> None:
        """Take live advice; a new run starts with no live advice."""
        if self._own:
            if isinstance(event, Advice):
                self.add(event)
                return
            self.model.apply((event,))
        self._dirty = True

    def refresh(self) -> None:
        """Show what arrived since the last frame (a reopened run's notices read again)."""
        if not self.model.live and self.model.revision("notices") != self._read_at:
            self._read_at = self.model.revision("notices")
            self._dirty = True
        if self._dirty:
            self._rebuild()

    # -- view ---------------------------------------------------------------
    def _rebuild(self) -> None:
        self._dirty = False
        row = self.list.currentRow()
        self.list.blockSignals(True)
        self.list.clear()
        for advice in self._static:
            self.list.addItem(self._item(advice, live=False))
        for advice in self._live:
            self.list.addItem(self._item(advice, live=True))
        self.list.blockSignals(False)
        n = self.list.count()
        if n:
            self.list.setCurrentRow(min(max(row, 0), n - 1))
            self._show(self.list.currentRow())
        else:
            self.detail.setHtml("<p>No notices: the advisor found no TensorFlow pitfall.</p>")
            self.open_button.setEnabled(False)
        live = len(self._live)
        self.summary.setText(
            f"{len(self._static)} from reading the script, {live} from the run"
            if n
            else "No notices."
        )
        self.count_changed.emit(n)

    def _item(self, advice: Advice, live: bool) -> QListWidgetItem:
        where = f"{Path(advice.file).name}:{advice.line}" if advice.line else "run"
        item = QListWidgetItem(f"{where}  {advice.title}" + ("  (from the run)" if live else ""))
        item.setToolTip(f"[{advice.rule}] {advice.message}")
        if live:
            item.setForeground(LIVE_COLOR)
        return item

    def selected(self) -> Advice | None:
        """The notice selected in the list, if any."""
        row = self.list.currentRow()
        items = self.notices()
        return items[row] if 0 <= row < len(items) else None

    def select(self, row: int) -> None:
        """Select notice ``row`` (what a click does)."""
        self.list.setCurrentRow(row)

    def _show(self, row: int) -> None:
        items = self.notices()
        if not 0 <= row < len(items):
            return
        a = items[row]
        esc = html.escape
        where = esc(a.location()) if a.file else "this run"
        parts = [
            f"<p><b>{esc(a.title)}</b> <span style='color:gray'>[{esc(a.rule)}] {where}</span></p>",
            f"<p>{esc(a.message)}.</p>"
            if not a.message.endswith(".")
            else f"<p>{esc(a.message)}</p>",
            f"<p><b>Fix:</b> <code>{esc(a.fix)}</code></p>" if a.fix else "",
        ]
        source = source_around(a.file, a.line)
        if source:
            parts.append(f"<pre style='background:#f4f4f4'>{source}</pre>")
        self.detail.setHtml("".join(parts))
        self.open_button.setEnabled(bool(a.file) and Path(a.file).is_file())

    def open_selected(self) -> bool:
        """Open the selected notice's script in the desktop's editor; False if there is none."""
        a = self.selected()
        if a is None or not a.file or not Path(a.file).is_file():
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(a.file))


def _as_advice(notice: Notice) -> Advice:
    """A notice of the run (``retracing``, ``control``...) as a row of the list."""
    title = notice.text.strip().splitlines()[0] if notice.text.strip() else notice.kind
    if len(title) > 100:
        title = title[:99] + "…"
    return Advice(notice.kind, title, notice.text.strip(), "")


def source_around(path: str, line: int, context: int = CONTEXT_LINES) -> str:
    """HTML of the lines around ``line`` of ``path``, that line in bold ("" if unreadable)."""
    if not path or line <= 0:
        return ""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    lo, hi = max(1, line - context), min(len(lines), line + context)
    out = []
    for n in range(lo, hi + 1):
        text = html.escape(f"{n:>4}  {lines[n - 1]}")
        out.append(f"<b style='color:#a00000'>{text}</b>" if n == line else text)
    return "\n".join(out)
