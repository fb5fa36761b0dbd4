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


class StreamProxy(io.TextIOBase):
    """A text stream that turns writes into ConsoleOutput events."""

    def __init__(self, name: str, emit: Emit, original: TextIO) -> None:
        super().__init__()
        self.name = name
        self._emit = emit
        self._original = original

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """Text encoding reported to callers (always UTF-8)."""
        return "utf-8"

    def writable(self) -> bool:
        """Always writable."""
        return True

    def isatty(self) -> bool:
        """Not a terminal: Keras then prints one progress line per epoch, not per step."""
        return False

    def write(self, text: str) -> int:
        """Emit ``text`` as console output."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._emit(ConsoleOutput(self.name, text))
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered here."""

    def fileno(self) -> int:
        """The fd the original stream wrote to (captured at fd level meanwhile)."""
        return self._original.fileno()

    @property
    def buffer(self) -> _BinaryProxy:
        """Binary side, for code that writes bytes to ``sys.stdout.buffer``."""
        return _BinaryProxy(self)


class _BinaryProxy(io.RawIOBase):
    """``sys.stdout.buffer`` of a :class:`StreamProxy`: bytes in, text events out."""

    def __init__(self, text: StreamProxy) -> None:
        super().__init__()
        self._text = text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def writable(self) -> bool:
        """Always writable."""
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Decode ``data`` (UTF-8) and emit it on the text stream."""
        self._text.write(self._decoder.decode(bytes(data)))
        return len(data)


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
        sys.stdout = StreamProxy("stdout", self._emit, out)  # type: ignore[assignment]
        sys.stderr = StreamProxy("stderr", self._emit, err)  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved_streams is not None:
            sys.stdout, sys.stderr = self._saved_streams
        for pump in self._pumps:
            pump.restore()
        self._pumps = []


class FdTextStream(io.TextIOBase):
    """A text stream that writes each call straight to a file descriptor (no buffer).

    The worker process gives the script one of these as ``sys.stdout`` and one as
    ``sys.stderr``, each on a pipe of its own to the viewer. Every write is one
    ``os.write``, so nothing is lost if the process dies right after it, and the
    viewer can tell Python's ``print`` from what reaches fds 1 and 2 directly
    (``tf.print``, C++ logs).

    Args:
        fd: where the bytes go (the caller keeps it open).
        name: ``"<stdout>"``-style name reported to callers.
    """

    def __init__(self, fd: int, name: str) -> None:
        super().__init__()
        self._fd = fd
        self._name = name

    @property
    def name(self) -> str:  # type: ignore[override]
        """The stream's name, as ``sys.stdout.name`` would give."""
        return self._name

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """Text encoding (always UTF-8)."""
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        """Unencodable characters are escaped, never an error."""
        return "backslashreplace"

    def writable(self) -> bool:
        """Always writable."""
        return True

    def isatty(self) -> bool:
        """Not a terminal (a pipe to the viewer)."""
        return False

    def fileno(self) -> int:
        """The pipe's fd."""
        return self._fd

    def write(self, text: str) -> int:
        """Write ``text`` now, as UTF-8."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        write_all(self._fd, text.encode("utf-8", "backslashreplace"))
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered here."""

    @property
    def buffer(self) -> _FdBinary:
        """Binary side, for code that writes bytes to ``sys.stdout.buffer``."""
        return _FdBinary(self._fd)


class _FdBinary(io.RawIOBase):
    """``sys.stdout.buffer`` of an :class:`FdTextStream`: bytes go straight to the fd."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        """Always writable."""
        return True

    def fileno(self) -> int:
        """The pipe's fd."""
        return self._fd

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Write all of ``data`` now."""
        write_all(self._fd, bytes(data))
        return len(data)


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out (pipes may take less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
