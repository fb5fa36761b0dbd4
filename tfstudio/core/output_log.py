"""``output.log``: a run's console text as the user saw it, kept in its run folder, bounded.

The viewer's side of a run (``core/process.py``) reads the worker's four pipes and the
notes it sends; every piece of console text it hands the viewer also goes here, in the
same order, on the same (reader) thread: never the training thread's work. Text that
comes before the run folder is known (TensorFlow's start-up lines, the script's first
prints) waits in memory and is written when :meth:`OutputLog.open` names the file.

Bounded: the first :data:`HEAD_CHARS` characters and the last :data:`TAIL_CHARS` are
kept, with one line between them saying how many were left out. The file grows by
appending (a killed viewer or worker leaves what was written); once the part after the
head has grown past twice :data:`TAIL_CHARS`, the file is rewritten (to a temporary file,
then renamed over it) as head, that line and the last ``TAIL_CHARS``.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

OUTPUT_LOG = "output.log"
HEAD_CHARS = 1_000_000
TAIL_CHARS = 4_000_000


def left_out_line(chars: int) -> str:
    """The line that stands for the text left out between the head and the tail."""
    return f"\n[tfstudio: {chars:,} characters of output left out here]\n"


class OutputLog:
    """One run's console text, bounded, written to a file once :meth:`open` names it.

    Errors writing (a full disk) are told once to ``on_error`` and the file is left as
    it was; nothing is raised to the caller.

    Args:
        head_chars: characters kept from the start.
        tail_chars: characters kept from the end.
        on_error: told (once) that the file could not be written, and why: a note for
            the run's console.
    """

    def __init__(
        self,
        head_chars: int = HEAD_CHARS,
        tail_chars: int = TAIL_CHARS,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.head_chars = head_chars
        self.tail_chars = tail_chars
        self.on_error = on_error
        self.path: Path | None = None
        self.left_out = 0  # characters dropped between head and tail
        self.failed = False
        self._head: list[str] = []
        self._head_n = 0
        self._tail: deque[str] = deque()  # text after the head, the last tail_chars of it
        self._tail_n = 0
        self._file_tail = 0  # characters after the head [and the left-out line] in the file
        self._file: object = None
        self._closed = False
        self._lock = threading.RLock()  # the reader thread writes; Stop's note comes from the UI

    # -- text ------------------------------------------------------------------
    def write(self, text: str) -> None:
        """Add console text (kept in memory until :meth:`open`, then appended to the file)."""
        with self._lock:
            self._write(text)

    def _write(self, text: str) -> None:
        if not text or self._closed:
            return
        if self._head_n < self.head_chars:
            part = text[: self.head_chars - self._head_n]
            self._head.append(part)
            self._head_n += len(part)
            self._append(part)
            text = text[len(part) :]
            if not text:
                return
        self._tail.append(text)
        self._tail_n += len(text)
        self._append(text, tail=True)
        while self._tail_n > self.tail_chars:  # drop from the front of the tail
            extra = self._tail_n - self.tail_chars
            first = self._tail[0]
            if len(first) <= extra:
                self._tail.popleft()
                self._tail_n -= len(first)
                self.left_out += len(first)
            else:
                self._tail[0] = first[extra:]
                self._tail_n -= extra
                self.left_out += extra
        if self._file is not None and self._file_tail > 2 * self.tail_chars:
            self._rewrite()

    def text(self) -> str:
        """What the file holds (or will hold once opened)."""
        with self._lock:
            return self._text()

    def _text(self) -> str:
        middle = left_out_line(self.left_out) if self.left_out else ""
        return "".join(self._head) + middle + "".join(self._tail)

    # -- the file --------------------------------------------------------------
    def open(self, path: str | os.PathLike[str]) -> None:
        """Write what was kept so far to ``path`` and append to it from now on."""
        with self._lock:
            self._open(path)

    def _open(self, path: str | os.PathLike[str]) -> None:
        if self._closed or self._file is not None or self.failed:
            return
        self.path = Path(path)
        self._rewrite()

    def open_run_folder(self, run_dir: str) -> None:
        """The run is recorded in ``run_dir``: :meth:`open` its ``output.log`` (a local
        folder; a URL's run folder keeps none: object stores do not append)."""
        if "://" not in run_dir:
            self.open(Path(run_dir) / OUTPUT_LOG)

    def close(self) -> None:
        """Bring the file to its bounded form and close it (idempotent)."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        if self._file is not None and self._file_tail > self._tail_n:
            self._rewrite()  # (text was left out since the last rewrite)
        self._closed = True
        self._close_file()

    def _append(self, text: str, tail: bool = False) -> None:
        if self._file is None:
            return
        if tail:
            self._file_tail += len(text)
        try:
            self._file.write(text)  # type: ignore[attr-defined]
            self._file.flush()  # type: ignore[attr-defined]
        except (OSError, ValueError) as exc:
            self._fail(exc)

    def _rewrite(self) -> None:
        """The file as :meth:`text` says, written to a temporary file and renamed over it."""
        assert self.path is not None
        self._close_file()
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8", errors="replace") as f:
                f.write(self._text())
            os.replace(tmp, self.path)
            self._file = open(self.path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115
        except OSError as exc:
            self._fail(exc)
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return
        self._file_tail = self._tail_n

    def _close_file(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()  # type: ignore[attr-defined]
            except OSError:
                pass

    def _fail(self, exc: BaseException) -> None:
        first = not self.failed
        self.failed = True
        self._close_file()
        if first and self.on_error is not None:
            self.on_error(
                f"The console output is no longer recorded in {self.path}: {exc}. "
                "The run goes on; what was written stays readable.\n"
            )
