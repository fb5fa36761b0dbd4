"""Capture what a run writes: Python's sys.stdout/sys.stderr and fds 1 and 2.

``tf.print`` and TensorFlow's C++ logs write straight to file descriptors 1
and 2, bypassing ``sys.stdout``; so both fds are pointed at pipes (``os.dup2``)
while a run lasts and a reader thread turns what arrives into events.
Python-level writes go through a proxy stream that emits at once, keeping
the script's own prints in order and labelled.
"""

from __future__ import annotations

import codecs
import io
import os
import sys
import threading
from collections.abc import Callable
from typing import TextIO

from tfstudio.core.events import ConsoleOutput

Emit = Callable[[ConsoleOutput], None]


class TextStream(io.TextIOBase):
    """A text stream that hands each write on at once (nothing is buffered).

    A run's ``sys.stdout``/``sys.stderr`` are these: in-process they turn writes into
    ``ConsoleOutput`` events (:func:`console_stream`); in the worker they write each
    call straight to a pipe of their own (:func:`fd_text_stream`).

    Args:
        name: what ``.name`` reports.
        write_text: takes each non-empty string written.
        fileno: returns the fd the stream stands for (asked only when a caller asks).
        write_bytes: takes the bytes written to ``.buffer``; by default they are
            decoded (UTF-8) and written as text.
    """

    def __init__(
        self,
        name: str,
        write_text: Callable[[str], object],
        fileno: Callable[[], int],
        write_bytes: Callable[[bytes], object] | None = None,
    ) -> None:
        super().__init__()
        self._name = name
        self._write_text = write_text
        self._fileno = fileno
        self._write_bytes = write_bytes

    @property
    def name(self) -> str:  # type: ignore[override]
        """The stream's name, as ``sys.stdout.name`` would give."""
        return self._name

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """Text encoding reported to callers (always UTF-8)."""
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        """Unencodable characters are escaped, never an error."""
        return "backslashreplace"

    def writable(self) -> bool:
        """Always writable."""
        return True

    def isatty(self) -> bool:
        """Not a terminal: Keras then prints one progress line per epoch, not per step."""
        return False

    def fileno(self) -> int:
        """The fd this stream stands for."""
        return self._fileno()

    def write(self, text: str) -> int:
        """Hand ``text`` on now."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._write_text(text)
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered here."""

    @property
    def buffer(self) -> _BinaryStream:
        """Binary side, for code that writes bytes to ``sys.stdout.buffer``."""
        return _BinaryStream(self._write_bytes or _decoding(self.write), self._fileno)


class _BinaryStream(io.RawIOBase):
    """``sys.stdout.buffer`` of a :class:`TextStream`."""

    def __init__(self, write: Callable[[bytes], object], fileno: Callable[[], int]) -> None:
        super().__init__()
        self._write = write
        self._fileno = fileno

    def writable(self) -> bool:
        """Always writable."""
        return True

    def fileno(self) -> int:
        """The fd of the text stream."""
        return self._fileno()

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Hand all of ``data`` on now."""
        self._write(bytes(data))
        return len(data)


def _decoding(write_text: Callable[[str], object]) -> Callable[[bytes], object]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return lambda data: write_text(decoder.decode(data))


def console_stream(name: str, emit: Emit, original: TextIO) -> TextStream:
    """A stream whose writes are ``ConsoleOutput(name, text)`` events (in-process capture)."""
    return TextStream(name, lambda text: emit(ConsoleOutput(name, text)), original.fileno)


def fd_text_stream(fd: int, name: str) -> TextStream:
    """A stream that writes each call straight to ``fd`` as UTF-8 (the worker's stdout/stderr).

    Every write is one ``os.write``, so nothing is lost if the process dies right
    after it, and the viewer can tell Python's ``print`` from what reaches fds 1
    and 2 directly (``tf.print``, C++ logs). The caller keeps ``fd`` open.
    """
    return TextStream(
        name,
        lambda text: write_all(fd, text.encode("utf-8", "backslashreplace")),
        lambda: fd,
        lambda data: write_all(fd, data),
    )


class _FdPump:
    """Points one fd at a pipe and reads it on a thread until restored."""

    def __init__(self, fd: int, name: str, emit: Emit) -> None:
        self.fd = fd
        self.name = name
        self._emit = emit
        self.saved = os.dup(fd)
        read_end, write_end = os.pipe()
        self._read_end = read_end
        os.dup2(write_end, fd)
        os.close(write_end)
        self._thread = threading.Thread(target=self._pump, name=f"tfstudio-{name}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            try:
                chunk = os.read(self._read_end, 65536)
            except OSError:
                break
            if not chunk:
                break
            text = decoder.decode(chunk)
            if text:
                self._emit(ConsoleOutput(self.name, text, native=True))
        tail = decoder.decode(b"", final=True)
        if tail:
            self._emit(ConsoleOutput(self.name, tail, native=True))
        os.close(self._read_end)

    def restore(self) -> None:
        """Put the fd back; the pipe drains and the reader ends."""
        os.dup2(self.saved, self.fd)  # drops the last write end of the pipe
        os.close(self.saved)
        self._thread.join(timeout=5)


class OutputCapture:
    """Captures a run's output at Python and fd level; a context manager.

    Everything written while it is active, from any thread, is captured: a
    consumer that must still reach the terminal (the headless progress line)
    writes to its own ``os.dup`` of fd 1/2 taken before the capture began.

    Args:
        emit: called with each ConsoleOutput, from whichever thread wrote.
        capture_fds: also redirect fds 1 and 2 (C++ output, ``tf.print``).
    """

    def __init__(self, emit: Emit, capture_fds: bool = True) -> None:
        self._emit = emit
        self._capture_fds = capture_fds
        self._pumps: list[_FdPump] = []
        self._saved_streams: tuple[TextIO, TextIO] | None = None

    def __enter__(self) -> OutputCapture:
        out, err = sys.stdout, sys.stderr
        self._saved_streams = (out, err)
        for stream in (out, err):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        if self._capture_fds:
            try:
                self._pumps = [_FdPump(1, "stdout", self._emit), _FdPump(2, "stderr", self._emit)]
            except OSError:
                self._pumps = []  # no usable fds (embedded interpreter): Python-level only
        sys.stdout = console_stream("stdout", self._emit, out)
        sys.stderr = console_stream("stderr", self._emit, err)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved_streams is not None:
            sys.stdout, sys.stderr = self._saved_streams
        for pump in self._pumps:
            pump.restore()
        self._pumps = []


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out (pipes may take less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
