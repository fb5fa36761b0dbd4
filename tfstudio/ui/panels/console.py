"""Console panel: what the script printed, in order, coloured by stream.

Output written at file-descriptor level (``tf.print``, TensorFlow's C++ logs)
is shown apart from Python's ``print``: another colour on a tinted background
(with a tooltip saying so), so a user sees that in graph mode ``print`` ran once, while
tracing, and ``tf.print`` every step.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QAction, QColor, QFont, QFontDatabase, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QVBoxLayout, QWidget

from tfstudio.core.events import (
    CheckpointRefused,
    ConsoleOutput,
    MonitorError,
    Notice,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.core.terminal import plain_text

MAX_LINES = 20_000
STREAM_COLOURS = {
    "stdout": "#1e1e1e",
    "stderr": "#a31515",
    "tfstudio": "#1f5fbf",
    # fd-level output (tf.print, C++ logs): teal / brown, on a tinted background
    "stdout native": "#00695c",
    "stderr native": "#8d4e00",
}
NATIVE_BACKGROUND = "#eef6f5"


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
    """

    EVENTS = (
        ConsoleOutput,
        RunStarted,
        RunEnded,
        MonitorError,
        Notice,
        CheckpointRefused,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(self, max_lines: int = MAX_LINES, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = QPlainTextEdit(self)
        self.view.setReadOnly(True)
        self.view.setMaximumBlockCount(max_lines)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
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
        self._buffer = ConsoleBuffer(max_lines)
        self._formats = {name: _format(name) for name in STREAM_COLOURS}
        self._at_line_start = True
        self.inserts = 0  # document edits made (one per frame with output)

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Steps carry no console output."""

    def ingest_event(self, event: object) -> None:
        """Queue console output and our own notes about the run."""
        if type(event) is ConsoleOutput:
            stream = f"{event.stream} native" if event.native else event.stream
            self._buffer.add(stream, plain_text(event.text))
        elif isinstance(event, RunStarted):
            args = " ".join(event.argv[1:])
            self.note(f"Run started: {event.script}{' ' + args if args else ''}", flush=False)
        elif isinstance(event, RunEnded):
            self.note(event.summary(), flush=False)
        elif isinstance(event, MonitorError):
            self.note(f"Monitoring error in {event.where}: {event.message}", flush=False)
        elif isinstance(event, Notice):
            self.note(f"Notice ({event.kind}): {event.text}", flush=False)
        elif isinstance(event, CheckpointRefused):
            self.note(f"Checkpoint {event.action} refused: {event.reason}", flush=False)

    def refresh(self) -> None:
        """Write everything queued since the last frame in one edit."""
        if not self._buffer:
            return
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
            cursor.insertText(text, self._formats.get(stream, fallback))
        cursor.endEditBlock()
        self.inserts += 1
        last = segments[-1][1] if segments else ""
        self._at_line_start = last.endswith("\n") if last else (clear_tail or self._at_line_start)
        if at_bottom:
            bar.setValue(bar.maximum())

    # -- public ------------------------------------------------------------
    def note(self, text: str, flush: bool = True) -> None:
        """Write one of tfstudio's own messages on a line of its own."""
        buf = self._buffer
        if buf.segments:
            line_open = not buf.segments[-1][1].endswith("\n")
        else:
            line_open = not (buf.clear_tail or self._at_line_start)
        if line_open:
            text = "\n" + text
        self._buffer.add("tfstudio", text + "\n")
        if flush:
            self.refresh()

    def text(self) -> str:
        """The console's plain text (for tests and copying)."""
        return self.view.toPlainText()

    def clear(self) -> None:
        """Empty the console."""
        self._buffer.take()
        self.view.clear()
        self._at_line_start = True


def _format(stream: str) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(STREAM_COLOURS[stream]))
    if stream == "tfstudio":
        fmt.setFontItalic(True)
    if stream.endswith(" native"):
        fmt.setBackground(QColor(NATIVE_BACKGROUND))
        fmt.setToolTip("written at file-descriptor level: tf.print or TensorFlow's C++ logs")
    return fmt
