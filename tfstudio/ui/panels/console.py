"""Console panel: what the script printed, in order, coloured by stream.

Output written at file-descriptor level (``tf.print``, TensorFlow's C++ logs)
is shown apart from Python's ``print``: another colour on a tinted background
(with a tooltip saying so), so a user sees that in graph mode ``print`` ran once, while
tracing, and ``tf.print`` every step.

TensorFlow's start-up messages (no CUDA driver, cuInit, CPU instructions; see
:mod:`tfstudio.core.tf_startup`) are folded into one quiet line per run that shows
them on click. Only native stderr lines in TensorFlow's log format are folded, and
only until the first fit or loop starts: nothing the script writes is hidden.

A reopened run's output (the console part of its run model, from its folder's
``output.log``) is shown in a document of its own; the live console's text waits
beside it and comes back, with what arrived meanwhile, when the live run is shown again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from PySide6.QtCore import QEvent, QObject, QPoint, QSize, Qt
from PySide6.QtGui import (
    QAction,
    QColor,
    QFont,
    QFontDatabase,
    QMouseEvent,
    QShowEvent,
    QTextBlock,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextOption,
)
from PySide6.QtWidgets import QPlainTextDocumentLayout, QPlainTextEdit, QVBoxLayout, QWidget

from tfstudio.core.events import (
    CheckpointRefused,
    ConsoleOutput,
    FitStarted,
    MonitorError,
    Notice,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.core.run_model import RunModel
from tfstudio.core.terminal import plain_text
from tfstudio.core.tf_startup import StartupFold, describe_startup
from tfstudio.ui.panels.visibility import out_of_sight

MAX_LINES = 20_000
DEFAULT_LINES = 14  # lines of output the console dock shows at first
STREAM_COLOURS = {
    "stdout": "#1e1e1e",
    "stderr": "#a31515",
    "tfstudio": "#1f5fbf",
    # fd-level output (tf.print, C++ logs): teal / brown, on a tinted background
    "stdout native": "#00695c",
    "stderr native": "#8d4e00",
}
NATIVE_BACKGROUND = "#eef6f5"
FOLD_COLOUR = "#8a8a8a"  # the folded start-up line: quiet, not an error
FOLD_STREAM = "fold "  # + the fold's id: a buffer segment holding a fold's line


@dataclass
class StartupMessages:
    """One run's folded TensorFlow start-up lines and how its line in the console looks.

    Args:
        id: the console block's ``userState`` that marks this fold's line.
        lines: the folded lines (shared with the :class:`StartupFold` that collects them).
    """

    id: int
    lines: list[str] = field(default_factory=list)
    expanded: bool = False
    written: bool = False  # its line is in the buffer or the document
    shown: int = 0  # lines inserted under it while expanded

    def header(self) -> str:
        """The fold's one line, with what a click does."""
        mark, action = ("▾", "hide") if self.expanded else ("▸", "show")
        return f"{mark} {describe_startup(self.lines)} (click to {action})"


class ConsoleBuffer:
    """Text waiting for the next frame, with carriage returns already resolved.

    A ``\\r`` not followed by ``\\n`` means "the next text replaces this line"
    (progress bars). Within a frame that is resolved here, in Python, so a bar
    redrawn 1,000 times costs one insert; only the line already on screen
    needs a delete.

    Args:
        max_lines: lines worth keeping; older text in the buffer is dropped early.
    """

    def __init__(self, max_lines: int = MAX_LINES) -> None:
        self.max_lines = max_lines
        self.segments: list[list[str]] = []  # [stream, text], consecutive streams merged
        self.clear_tail = False  # delete the document's open last line before appending
        self._cr = False  # a "\r" was seen and the line has not been rewritten yet
        self._newlines = 0

    def __bool__(self) -> bool:
        return bool(self.segments) or self.clear_tail

    def add(self, stream: str, text: str) -> None:
        """Append a chunk of ``stream`` output (any size, not necessarily whole lines)."""
        if not text:
            return
        if "\r" not in text:
            if self._cr and text[0] != "\n":
                self._rewind()
            self._cr = False
            self._put(stream, text)
            return
        out: list[str] = []  # "\n" items and newline-free pieces
        for i, line in enumerate(text.split("\n")):
            if i:
                out.append("\n")
                self._cr = False  # "\r\n" (even split across chunks) keeps the line
            for j, piece in enumerate(line.split("\r")):
                if j:
                    self._cr = True
                if piece:
                    if self._cr:
                        self._rewind_into(out)
                        self._cr = False
                    out.append(piece)
        if out:
            self._put(stream, "".join(out))

    def take(self) -> tuple[bool, list[list[str]]]:
        """Return (clear_tail, segments) and empty the buffer."""
        out = (self.clear_tail, self.segments)
        self.segments, self.clear_tail, self._newlines = [], False, 0
        return out

    def _put(self, stream: str, text: str) -> None:
        if self.segments and self.segments[-1][0] == stream:
            self.segments[-1][1] += text
        else:
            self.segments.append([stream, text])
        self._newlines += text.count("\n")
        if self._newlines > 2 * self.max_lines:
            self._trim()

    def _rewind_into(self, out: list[str]) -> None:
        """Drop the unfinished line, first from ``out``, then from the buffer."""
        while out:
            if out[-1] == "\n":
                return
            out.pop()
        self._rewind()

    def _rewind(self) -> None:
        """Drop the current (last, unfinished) line."""
        segs = self.segments
        while segs:
            stream, text = segs[-1]
            cut = text.rfind("\n")
            if cut >= 0:
                segs[-1][1] = text[: cut + 1]
                return
            segs.pop()
        self.clear_tail = True

    def _trim(self) -> None:
        """Keep only the last ``max_lines`` lines: the view could not hold more."""
        keep = self.max_lines
        out: list[list[str]] = []
        for stream, text in reversed(self.segments):
            n = text.count("\n")
            if n >= keep:
                lines = text.split("\n")
                out.append([stream, "\n".join(lines[-keep - 1 :])])
                keep = 0
                break
            out.append([stream, text])
            keep -= n
        self.segments = out[::-1]
        self._newlines = self.max_lines - keep


class ConsolePanel(QWidget):
    """Read-only console fed from ``ConsoleOutput`` events, one insert per frame.

    Args:
        max_lines: lines kept before the oldest are dropped.
        parent: Qt parent.
        model: the run shown (the window's session gives it; :meth:`show_model` changes
            it): the live run's output is written as its events come; a reopened run's
            is its model's console text. None: the live run's model is the panel's own.
    """

    EVENTS = (
        ConsoleOutput,
        RunStarted,
        RunEnded,
        MonitorError,
        Notice,
        CheckpointRefused,
        FitStarted,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(
        self,
        max_lines: int = MAX_LINES,
        parent: QWidget | None = None,
        model: RunModel | None = None,
    ) -> None:
        super().__init__(parent)
        self.model = model if model is not None else RunModel(live=True)
        self._live_document: QTextDocument | None = None  # set aside while a reopened run shows
        # a reopened run's text as drawn: (loading, console resets, chunks added)
        self._recorded_drawn: tuple[bool, int, int] = (False, -1, -1)
        self.view = QPlainTextEdit(self)
        # the live text's document is the panel's own: set aside while a reopened run's text
        # is shown (the editor deletes a default document it replaces)
        live_doc = QTextDocument(self)
        live_doc.setDocumentLayout(QPlainTextDocumentLayout(live_doc))
        self.view.setDocument(live_doc)
        self.view.setReadOnly(True)
        self.view.setMaximumBlockCount(max_lines)
        # Long lines (a failure's summary, a traceback's source line) wrap at the panel's
        # width, so each is readable whole; "Wrap long lines" in the context menu turns it off.
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.view.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.view.setUndoRedoEnabled(False)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.view.setFont(font)
        self.view.setPlaceholderText("Script output appears here.")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.clear_action = QAction("Clear console", self)
        self.clear_action.triggered.connect(self.clear)
        self.view.addAction(self.clear_action)
        self.wrap_action = QAction("Wrap long lines", self)
        self.wrap_action.setCheckable(True)
        self.wrap_action.setChecked(True)
        self.wrap_action.toggled.connect(self.set_wrap)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._show_menu)
        self._buffer = ConsoleBuffer(max_lines)
        self._formats = {name: _format(name) for name in STREAM_COLOURS}
        self._fold_format = _fold_format()
        self._at_line_start = True
        self.inserts = 0  # document edits made (one per frame with output)
        self.folds: dict[int, StartupMessages] = {}
        self._new_phase()
        self.view.viewport().setMouseTracking(True)
        self.view.viewport().installEventFilter(self)

    # -- size and wrapping ---------------------------------------------------
    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        """Room for :data:`DEFAULT_LINES` lines of output (the dock's first height)."""
        hint = super().sizeHint()
        return QSize(hint.width(), self.wanted_height())

    def wanted_height(self, lines: int = DEFAULT_LINES) -> int:
        """The panel's height in px that shows ``lines`` lines of output."""
        view = self.view
        if self.isVisible() and view.viewport().height() > 0:  # laid out: what is not text
            frame = self.height() - view.viewport().height()
        else:
            frame = 2 * view.frameWidth()
        margin = int(view.document().documentMargin() * 2)
        return int(lines * view.fontMetrics().lineSpacing()) + frame + margin

    def visible_lines(self) -> float:
        """How many lines of output the view shows at its present height."""
        return self.view.viewport().height() / self.view.fontMetrics().lineSpacing()

    def set_wrap(self, wrap: bool) -> None:
        """Wrap long lines at the panel's width (True), or scroll sideways to them."""
        mode = QPlainTextEdit.LineWrapMode
        self.view.setLineWrapMode(mode.WidgetWidth if wrap else mode.NoWrap)
        if self.wrap_action.isChecked() != bool(wrap):
            self.wrap_action.setChecked(bool(wrap))

    def _show_menu(self, pos: QPoint) -> None:
        menu = self.view.createStandardContextMenu()
        menu.addSeparator()
        menu.addAction(self.wrap_action)
        menu.addAction(self.clear_action)
        menu.exec(self.view.viewport().mapToGlobal(pos))
        menu.deleteLater()

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Steps carry no console output."""

    def ingest_event(self, event: object) -> None:
        """Queue console output and our own notes about the run."""
        if type(event) is ConsoleOutput:
            stream = f"{event.stream} native" if event.native else event.stream
            text = event.text
            if self._folding and stream == "stderr native":
                before = len(self._startup.lines)
                text = self._startup.feed(text)
                if len(self._startup.lines) > before:
                    self._on_startup_lines()
            self._buffer.add(stream, plain_text(text))
        elif isinstance(event, RunStarted):
            args = " ".join(event.argv[1:])
            self.note(f"Run started: {event.script}{' ' + args if args else ''}", flush=False)
            self._run_seen = True
            self._write_fold()  # a warm worker's import messages came before the run
        elif isinstance(event, FitStarted):
            self._end_phase()
        elif isinstance(event, RunEnded):
            self._end_phase()
            self._write_fold()
            self.note(event.summary(), flush=False)
            self._forget_trimmed_folds()
            self._new_phase()  # the next run's worker may write before its RunStarted
        elif isinstance(event, MonitorError):
            self.note(event.headline(), flush=False)
        elif isinstance(event, Notice):
            self.note(f"Notice ({event.kind}): {event.text}", flush=False)
        elif isinstance(event, CheckpointRefused):
            self.note(f"Checkpoint {event.action} refused: {event.reason}", flush=False)

    def refresh(self) -> None:
        """Write everything queued since the last frame in one edit.

        Out of sight (its dock closed or behind another tab) the text waits in the
        buffer, which keeps the newest ``max_lines``, and is written when shown. A
        reopened run's text is written again when it was read (at last, or on: a
        followed run's new text is appended).
        """
        if not self.model.live:
            self._draw_recorded()
        elif not out_of_sight(self):
            self._write_pending()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt API)
        """Shown again: write what arrived while out of sight."""
        super().showEvent(event)
        self._write_pending()

    def catch_up(self) -> None:
        """Write what arrived while out of sight, now that the dock is in front."""
        if not out_of_sight(self):
            self._write_pending()

    def show_model(self, model: RunModel) -> None:
        """Show ``model``'s output: the live console, or a reopened run's recorded text."""
        if model is self.model:
            return
        self.model = model
        shown = self.view.document()
        if model.live:
            if self._live_document is not None:
                self.view.setDocument(self._live_document)
                self._live_document = None
                shown.deleteLater()  # the reopened run's text
                self._write_pending()
            return
        if self._live_document is None:
            self._live_document = shown
        else:
            shown.deleteLater()  # another reopened run's text
        doc = QTextDocument(self)
        doc.setDocumentLayout(QPlainTextDocumentLayout(doc))
        doc.setDefaultFont(self.view.font())
        doc.setMaximumBlockCount(self._live_document.maximumBlockCount())
        self.view.setDocument(doc)
        self._recorded_drawn = (False, -1, -1)
        self._draw_recorded()

    def _draw_recorded(self) -> None:
        """A reopened run's text: whole when first shown, read or read afresh; a followed
        run's new chunks appended."""
        model, console = self.model, self.model.console
        drawn = (model.loading, console.resets, console.added)
        if drawn == self._recorded_drawn:
            return
        was_loading, resets, added = self._recorded_drawn
        self._recorded_drawn = drawn
        doc = self.view.document()
        cursor = QTextCursor(doc)
        chunks = console.chunks
        if was_loading == model.loading and resets == console.resets and added >= 0:
            chunks = console.since(added)  # (the head stays)
            cursor.movePosition(QTextCursor.MoveOperation.End)
        else:
            doc.clear()
            head = f"Output of run '{model.name}', as recorded in its folder"
            if model.loading:
                head += ": reading…"
            else:
                if console.dropped:
                    head += f" ({console.dropped:,} characters at the start left out)"
                if not len(console):
                    head += ": none was recorded"
            cursor.insertText(head + "\n", self._formats["tfstudio"])
        bar = self.view.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 2
        cursor.beginEditBlock()
        for stream, native, text in chunks:
            name = f"{stream} native" if native else stream
            cursor.insertText(plain_text(text), self._formats.get(name, self._formats["stdout"]))
        cursor.endEditBlock()
        if at_bottom:
            self.view.moveCursor(QTextCursor.MoveOperation.End)

    def _write_pending(self) -> None:
        if self._live_document is not None:
            return  # a reopened run is shown: the live text waits in the buffer
        if self._buffer:
            self._write_buffer()
        for fold_id in list(self._fold_dirty):
            fold = self.folds.get(fold_id)
            if fold is None or fold.written:
                del self._fold_dirty[fold_id]
                if fold is not None:
                    self._render_fold(fold)

    def _write_buffer(self) -> None:
        clear_tail, segments = self._buffer.take()
        bar = self.view.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 2
        cursor = QTextCursor(self.view.document())
        cursor.beginEditBlock()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        if clear_tail:
            cursor.movePosition(
                QTextCursor.MoveOperation.StartOfBlock, QTextCursor.MoveMode.KeepAnchor
            )
            cursor.removeSelectedText()
        fallback = self._formats["stdout"]
        for stream, text in segments:
            if stream.startswith(FOLD_STREAM):
                cursor.insertText(text, self._fold_format)
                # the fold's line is the last one written: mark it for clicks and updates
                cursor.block().previous().setUserState(int(stream[len(FOLD_STREAM) :]))
                continue
            cursor.insertText(text, self._formats.get(stream, fallback))
        cursor.endEditBlock()
        self.inserts += 1
        last = segments[-1][1] if segments else ""
        self._at_line_start = last.endswith("\n") if last else (clear_tail or self._at_line_start)
        if at_bottom:
            bar.setValue(bar.maximum())

    # -- TensorFlow's start-up messages ------------------------------------
    def _new_phase(self) -> None:
        """Fold start-up lines again: a new run (and its worker) is coming."""
        self._startup = StartupFold()
        self._fold: StartupMessages | None = None
        self._folding = True
        self._run_seen = False
        if not hasattr(self, "_fold_dirty"):
            self._fold_dirty: dict[int, bool] = {}

    def _end_phase(self) -> None:
        """Training started (or the run ended): every later line is shown as written."""
        if self._folding:
            self._folding = False
            rest = self._startup.flush()
            if rest:
                self._buffer.add("stderr native", plain_text(rest))

    def _on_startup_lines(self) -> None:
        if self._fold is None:
            fold_id = max(self.folds, default=0) + 1
            self._fold = StartupMessages(fold_id, self._startup.lines)
            self.folds[fold_id] = self._fold
        if self._run_seen:
            self._write_fold()
        self._fold_dirty[self._fold.id] = True

    def _write_fold(self) -> None:
        """Put the fold's line in the console, once, where the start-up messages began."""
        fold = self._fold
        if fold is None or fold.written or not fold.lines:
            return
        fold.written = True
        self._line(f"{FOLD_STREAM}{fold.id}", fold.header())
        self._fold_dirty[fold.id] = True

    def _forget_trimmed_folds(self) -> None:
        """Drop the folds whose line the line limit has dropped from the document.

        Only once the document is full (only then are lines dropped), so a console
        kept run after run holds at most the folds it can still show.
        """
        doc = self.view.document()
        if doc.blockCount() < self.view.maximumBlockCount():
            return
        present = set()
        block = doc.firstBlock()
        while block.isValid():
            present.add(block.userState())
            block = block.next()
        self.folds = {
            k: v for k, v in self.folds.items() if k in present or v is self._fold or not v.written
        }

    def startup_folds(self) -> list[StartupMessages]:
        """Every start-up fold in the console, oldest first (for tests and menus)."""
        return [self.folds[k] for k in sorted(self.folds)]

    def toggle_fold(self, fold: StartupMessages) -> None:
        """Show a fold's lines under its line, or hide them again."""
        self.refresh()  # its line must be in the document
        fold.expanded = not fold.expanded
        self._render_fold(fold)

    def _fold_block(self, fold: StartupMessages) -> QTextBlock | None:
        block = self.view.document().lastBlock()
        while block.isValid():
            if block.userState() == fold.id:
                return block
            block = block.previous()
        return None

    def _render_fold(self, fold: StartupMessages) -> None:
        """Rewrite the fold's line (its count may have grown) and the lines shown under it."""
        block = self._fold_block(fold)
        if block is None:
            return  # scrolled out of the kept lines
        doc = self.view.document()
        number = block.blockNumber()
        cursor = QTextCursor(block)
        cursor.beginEditBlock()
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(fold.header(), self._fold_format)
        end = cursor.position()
        if fold.shown:
            last = doc.findBlockByNumber(number + fold.shown)
            cursor.setPosition(end)
            cursor.setPosition(last.position() + last.length() - 1, QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            fold.shown = 0
        if fold.expanded and fold.lines:
            cursor.setPosition(end)
            cursor.insertText("\n" + "\n".join(fold.lines), self._formats["stderr native"])
            fold.shown = len(fold.lines)
        cursor.endEditBlock()
        doc.findBlockByNumber(number).setUserState(fold.id)
        for i in range(1, fold.shown + 1):
            doc.findBlockByNumber(number + i).setUserState(-1)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """A click on a fold's line opens or closes it; the pointer shows it can."""
        kind = event.type()
        if kind in (QEvent.Type.MouseButtonRelease, QEvent.Type.MouseMove) and isinstance(
            event, QMouseEvent
        ):
            block = self.view.cursorForPosition(event.position().toPoint()).block()
            fold = self.folds.get(block.userState())
            if kind == QEvent.Type.MouseMove:
                shape = Qt.CursorShape.PointingHandCursor if fold else Qt.CursorShape.IBeamCursor
                self.view.viewport().setCursor(shape)
            elif fold is not None and event.button() == Qt.MouseButton.LeftButton:
                self.toggle_fold(fold)
                return True
        return super().eventFilter(watched, event)

    # -- public ------------------------------------------------------------
    def note(self, text: str, flush: bool = True) -> None:
        """Write one of tfstudio's own messages on a line of its own."""
        self._line("tfstudio", text)
        if flush:
            self.refresh()

    def _line(self, stream: str, text: str) -> None:
        """Queue ``text`` on a line of its own."""
        buf = self._buffer
        if buf.segments:
            line_open = not buf.segments[-1][1].endswith("\n")
        else:
            line_open = not (buf.clear_tail or self._at_line_start)
        if line_open:
            text = "\n" + text
        self._buffer.add(stream, text + "\n")

    def text(self) -> str:
        """The console's plain text (for tests and copying), text not yet shown included."""
        self._write_pending()
        return self.view.toPlainText()

    def clear(self) -> None:
        """Empty the console."""
        self._buffer.take()
        self.view.clear()
        self._at_line_start = True
        for fold in self.folds.values():
            fold.shown = 0
        self.folds = {k: v for k, v in self.folds.items() if v is self._fold}
        if self._fold is not None:
            self._fold.written = False
            if self._run_seen:
                self._write_fold()


def _format(stream: str) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(STREAM_COLOURS[stream]))
    if stream == "tfstudio":
        fmt.setFontItalic(True)
    if stream.endswith(" native"):
        fmt.setBackground(QColor(NATIVE_BACKGROUND))
        fmt.setToolTip("written at file-descriptor level: tf.print or TensorFlow's C++ logs")
    return fmt


def _fold_format() -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(FOLD_COLOUR))
    fmt.setFontItalic(True)
    fmt.setToolTip("TensorFlow's start-up messages: click to show or hide them")
    return fmt
