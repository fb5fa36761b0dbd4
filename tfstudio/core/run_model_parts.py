"""Two parts of a run model that are more than a list: the console text and the system
samples (:mod:`tfstudio.core.run_model` holds the rest, and re-exports these)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

import numpy as np

CONSOLE_MAX_CHARS = 5_000_000  # the console text a model keeps (the newest; see ConsoleText)
SYSTEM_MAX_SAMPLES = 100_000  # per tag: ~28 hours at one sample a second


class ConsoleText:
    """What the script printed, stdout and stderr interleaved as they came, bounded.

    Chunks are kept in order with their stream (a view colours them); past
    ``max_chars`` the oldest chunks go and :attr:`dropped` counts the characters
    left out (the rule a reopened run follows too: its ``output.log`` is bounded
    by the recorder, see :meth:`RunModel.load`).

    Args:
        max_chars: characters kept at most.
    """

    def __init__(self, max_chars: int = CONSOLE_MAX_CHARS) -> None:
        self.max_chars = max_chars
        self.chunks: deque[tuple[str, bool, str]] = deque()  # (stream, native, text)
        self.added = 0  # chunks ever added: a view keeps how many it drew
        self.dropped = 0  # characters left out at the start (the bound)
        self.resets = 0  # times the text was cleared (a view then draws it afresh)
        self._chars = 0

    def add(self, stream: str, text: str, native: bool = False) -> None:
        """Append a chunk of one stream's output."""
        if not text:
            return
        self.chunks.append((stream, native, text))
        self.added += 1
        self._chars += len(text)
        while self._chars > self.max_chars and len(self.chunks) > 1:
            _, _, old = self.chunks.popleft()
            self._chars -= len(old)
            self.dropped += len(old)

    def set_text(self, text: str) -> None:
        """The whole text at once (a recorded run's ``output.log``; its streams unknown)."""
        self.clear()
        self.add("stdout", text)

    def clear(self) -> None:
        """Forget every chunk."""
        self.chunks.clear()
        self.added = 0
        self.dropped = 0
        self.resets += 1
        self._chars = 0

    def since(self, added: int) -> list[tuple[str, bool, str]]:
        """The chunks added after the first ``added`` (those still kept)."""
        new = self.added - added
        if new <= 0:
            return []
        if new >= len(self.chunks):
            return list(self.chunks)
        return list(self.chunks)[-new:]

    def text(self) -> str:
        """Every kept chunk's text, in order (what the user saw, less the dropped start)."""
        return "".join(c[2] for c in self.chunks)

    def __len__(self) -> int:
        return self._chars


class SystemSamples:
    """System samples of a run: ``tag -> (seconds since the run started, values)``.

    Tags are the recorded scalars' (``system/process_cpu``, ...). Each tag keeps at
    most ``max_samples`` points (the oldest half is thinned past it).
    """

    def __init__(self, max_samples: int = SYSTEM_MAX_SAMPLES) -> None:
        self.max_samples = max_samples
        self.series: dict[str, tuple[list[float], list[float]]] = {}

    def add(self, t: float, values: Mapping[str, float]) -> None:
        """One sample taken ``t`` seconds into the run (one value per tag)."""
        for tag, value in values.items():
            ts, vs = self.series.setdefault(tag, ([], []))
            ts.append(float(t))
            vs.append(float(value))
            if len(ts) > self.max_samples:
                half = len(ts) // 2
                ts[:half] = ts[:half:2]
                vs[:half] = vs[:half:2]

    def set_series(self, tag: str, t: Iterable[float], values: Iterable[float]) -> None:
        """One tag's whole series (a recorded run's)."""
        self.series[tag] = ([float(v) for v in t], [float(v) for v in values])

    def arrays(self, tag: str) -> tuple[np.ndarray, np.ndarray]:
        """One tag's times and values as arrays (empty when absent)."""
        ts, vs = self.series.get(tag, ((), ()))
        return np.asarray(ts, dtype=np.float64), np.asarray(vs, dtype=np.float64)

    def as_dict(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Every tag's arrays (``RunRecord.system``'s shape)."""
        return {tag: self.arrays(tag) for tag in self.series}

    def tags(self) -> list[str]:
        """The tags sampled, in the order they came."""
        return list(self.series)

    def clear(self) -> None:
        """Forget every sample."""
        self.series.clear()
