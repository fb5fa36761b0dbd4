"""TensorFlow's start-up messages: which native stderr lines they are, and one line for them.

Importing TensorFlow (and its first op) writes a handful of C++ log lines to file
descriptor 2 on every run: no CUDA driver, cuInit failed, CPU instructions, oneDNN.
They say nothing about the user's script, so the console folds them into one quiet
line. Only lines in TensorFlow's own log format from its start-up sources match;
nothing a script prints or ``tf.print``s looks like them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["StartupFold", "is_startup_line", "describe_startup"]

# glog / absl:   "I0000 00:00:1795485259.405270    3261 cudart_stub.cc:31] Could not ..."
# TF's own:      "2024-05-01 10:00:00.123456: I tensorflow/core/platform/cpu_feature_guard.cc:210]"
_LOG_LINE = re.compile(
    r"^(?:[IWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] )"
    r"(?:\S*/)?(?P<source>[\w.-]+\.cc):\d+\] "
)
# The C++ sources whose messages belong to start-up (device discovery, CPU features,
# plugin registration): seen on TF 2.15-2.21 on CPU-only and CUDA machines.
STARTUP_SOURCES = frozenset(
    {
        "cudart_stub.cc",
        "cuda_platform.cc",
        "cuda_executor.cc",
        "cuda_driver.cc",
        "cuda_diagnostics.cc",
        "cuda_fft.cc",
        "cuda_dnn.cc",
        "cuda_blas.cc",
        "dso_loader.cc",
        "cpu_feature_guard.cc",
        "port.cc",
        "computation_placer.cc",
        "gpu_device.cc",
        "service.cc",
    }
)
# Lines without the log prefix that TensorFlow writes along with those above.
STARTUP_TEXTS = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "To enable the following instructions:",
    "TF-TRT Warning: Could not find TensorRT",
)
_STARTS = re.compile(r"^(?:[IWEF]\d|\d{4}-|WARNING: All|To enable|TF-TRT)")
_NO_GPU = ("Could not find cuda drivers", "failed call to cuInit", "Failed call to cuInit")
_GPU = re.compile(r"Created device \S*GPU")


def is_startup_line(line: str) -> bool:
    """True for one line (no newline) of TensorFlow's own start-up messages."""
    text = line.rstrip("\r\n")
    if text.startswith(STARTUP_TEXTS):
        return True
    match = _LOG_LINE.match(text)
    return match is not None and match.group("source") in STARTUP_SOURCES


def describe_startup(lines: Sequence[str]) -> str:
    """``TensorFlow start-up: 4 messages, no GPU found`` for the folded lines."""
    n = len(lines)
    text = f"TensorFlow start-up: {n} message{'' if n == 1 else 's'}"
    if any(_GPU.search(line) for line in lines):
        return text + ", GPU found"
    if any(marker in line for line in lines for marker in _NO_GPU):
        return text + ", no GPU found"
    return text


class StartupFold:
    """Splits native stderr into start-up lines (kept here) and the rest (passed on).

    Feed it text chunks; it holds a line's start until its end arrives, so a line
    split across chunks is judged whole.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._partial = ""

    def feed(self, text: str) -> str:
        """Take a chunk; return the text that is not start-up noise, in order."""
        text = self._partial + text
        cut = text.rfind("\n") + 1
        whole, self._partial = text[:cut], text[cut:]
        kept: list[str] = []
        for line in whole.splitlines(keepends=True):
            if is_startup_line(line):
                self.lines.append(line.rstrip("\r\n"))
            else:
                kept.append(line)
        if self._partial and not _may_start_a_startup_line(self._partial):
            kept.append(self.flush())  # cannot be one of ours: show it now
        return "".join(kept)

    def flush(self) -> str:
        """The unfinished line held back, if any (start-up is over)."""
        rest, self._partial = self._partial, ""
        return rest


def _may_start_a_startup_line(text: str) -> bool:
    """True when ``text`` (an unfinished line) could still become a start-up line."""
    return len(text) < 8 or _STARTS.match(text) is not None
