"""``tfstudio run``'s view of a run: the worker's events and the script's output as lines.

What the terminal shows, and why:

- The script's output as it wrote it, and tfstudio's lines (``tfstudio: ...``) in time
  order with it: the engine's events reach this process in batches, up to a few tenths
  of a second after the script's output beside them, so the script's output waits
  :data:`HOLD_S` here and each event goes in where its time says (``RunStarted.clock``
  maps the run's clock onto this process's).
- tfstudio's lines only at the script's line boundaries: a line of ours never breaks
  a line the script holds open (Keras's progress bar); it waits for the line's end,
  or until the script has been quiet for :data:`IDLE_S`.
- Per epoch, nothing of ours: a fit that prints its own epochs (``verbose`` not 0)
  says everything; a silent fit (``verbose=0``) gets the progress line, redrawn in
  place on a terminal, and one line at its end.
- TensorFlow's start-up messages folded into one line (all of them with
  ``--verbose``, and in the run folder's ``startup.log``).
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import TextIO

from tfstudio.core.events import (
    Advice,
    ConsoleOutput,
    EngineStatus,
    EpochEnded,
    FitEnded,
    FitStarted,
    GradientStats,
    InspectorStatus,
    ModelBuilt,
    MonitorError,
    RunDevices,
    RunEnded,
    RunRecording,
    RunStarted,
    StepColumns,
    StepEnded,
)
from tfstudio.core.progress import ProgressTracker, format_value
from tfstudio.core.system import device_line
from tfstudio.core.tf_startup import StartupFold
from tfstudio.headless_line import ProgressLine, describe, plural

# The script's output waits until the engine's events have caught up with it (an event
# dated after it arrived), or this long at most, for tfstudio's lines dated before it.
HOLD_S = 0.5
IDLE_S = 2.0  # a line the script left open and let be this long: ours may follow it
LOG_EVERY_S = 60.0  # off a terminal: a silent fit's progress, at most this often
STARTUP_LOG = "startup.log"  # TensorFlow's start-up messages, in the run folder


# Words of the window that mean nothing in a terminal, in the engine's shared notes.
_WINDOW_WORDS = (
    (re.compile(r"every N steps in the \w+ dock, or "), ""),
    (re.compile(r",? in the \w+ dock\b"), ""),
)


def terminal_words(text: str) -> str:
    """A note of the engine's as the terminal says it (no window words: docks, tabs)."""
    for pattern, repl in _WINDOW_WORDS:
        text = pattern.sub(repl, text)
    return text


class TerminalView:
    """The run as the terminal shows it: the script's output and tfstudio's lines, in order.

    Feed it every event as it arrives (:meth:`take`) and call :meth:`release` often;
    :meth:`finish` prints whatever waits.

    Args:
        line: the progress line (on the terminal's stderr).
        out: where the script's stdout goes.
        err: where the script's stderr and tfstudio's lines go.
        verbose: show TensorFlow's start-up messages as they come.
        started: ``time.perf_counter()`` when ``tfstudio run`` started (the run's length
            in its summary counts from here: starting Python and TensorFlow is part of it).
    """

    def __init__(
        self,
        line: ProgressLine,
        out: TextIO,
        err: TextIO,
        *,
        verbose: bool = False,
        started: float | None = None,
        hold: float = HOLD_S,
    ) -> None:
        self.line = line
        self.out = out
        self.err = err
        self.verbose = verbose
        self.started = time.perf_counter() if started is None else started
        self.hold = hold
        self.tracker = ProgressTracker()
        self.ended: RunEnded | None = None
        self.run_dir: str | None = None
        self.startup = StartupFold()
        self._folding = True  # TensorFlow's start-up: until training starts
        self._clock0: float | None = None  # the worker's run clock's zero, on ours
        # (when, order, kind, what, at): "line" (ours) or a stream's text; ``at``: the byte
        # offset of a piece of the script's Python output in its stream (None for the rest).
        # Orders are tuples: a piece split at an event's mark keeps its own, the event goes
        # just after it and the rest of the piece after that.
        self._held: list[tuple[float, tuple[int, ...], str, str, int | None]] = []
        self._order = 0
        # bytes of the script's sys.stdout / sys.stderr that arrived (the worker counts the
        # same: FitStarted.output and FitEnded.output say where their lines go)
        self._written = {"stdout": 0, "stderr": 0}
        self._marked: list[tuple[float, tuple[int, int], float, list[tuple[str, str]]]] = []
        # The newest time (on our clock) of an event that arrived: the engine's events up
        # to it are here (the pump hands them on in the order they were emitted).
        self._caught_up = -1e18
        self._waiting: list[str] = []  # our lines, waiting for the script's line to end
        self._labels: dict[int, str] = {}  # fit_index -> "fit 1" / "loop 2"
        self._label = ""  # the running segment's
        self._silent: dict[int, FitStarted] = {}  # fits that print nothing per epoch
        self._epochs: dict[int, EpochEnded] = {}  # each fit's last epoch
        self._logged = 0.0  # off a terminal: when a silent fit's progress was last printed
        self._gradients = False  # some were recorded
        self._inspector_waits = ""  # the inspector's last word on what it does not sample
        self._device: str | None = None  # the device line, to say

    # -- events in ---------------------------------------------------------------
    def take(self, event: object, now: float | None = None) -> None:
        """One event, as it arrives (``now``: ``time.perf_counter()``)."""
        now = time.perf_counter() if now is None else now
        kind = type(event)
        if kind is StepColumns or kind is StepEnded:
            self.tracker.feed(event)
            self._steps_in(event, now)
            return
        self.tracker.feed(event)
        if kind is ConsoleOutput:
            self._console(event, now)  # type: ignore[arg-type]
            return
        if kind is RunStarted:
            clock = event.clock  # type: ignore[attr-defined]
            self._clock0 = clock if 0 < clock <= now else None
            return
        if self._clock0 is not None and isinstance(getattr(event, "time", None), float):
            self._caught_up = max(self._caught_up, self._when(event, now))
        if kind is RunRecording:
            self.run_dir = event.run_dir  # type: ignore[attr-defined]
            return
        if kind is GradientStats:
            self._gradients = True
            return
        if kind is InspectorStatus:
            self._inspector_waits = event.waiting  # type: ignore[attr-defined]
            return
        if kind is RunDevices:
            # said with the fit or loop announced next in the same batch (the engine reports
            # the devices just before it), else at the next release
            self._device = f"tfstudio: {device_line(event)}"  # type: ignore[arg-type]
            return
        when = self._when(event, now)
        items: list[tuple[str, str]] = []
        if kind is FitStarted:
            items += self._end_startup()
            items += self._device_line()
        elif kind is RunEnded:  # no training came (a script without fit or loop): before it
            items += self._end_startup()
        items += [("line", text) for text in self._lines(event, now)]
        mark = getattr(event, "output", None)
        if mark is not None and items:
            self._marked.append((now, mark, when, items))
            self._place_marked(now)
        else:
            for item_kind, what in items:
                self._hold(when, item_kind, what)
        if kind is RunEnded:
            self.ended = event  # type: ignore[assignment]

    def _steps_in(self, event: StepColumns | StepEnded, now: float) -> None:
        """Steps arrived: the engine's events are here up to the newest step's time."""
        if self._clock0 is None:
            return
        if isinstance(event, StepColumns):
            if not len(event):
                return
            t = float(event.time.max())
        else:
            t = event.time
        self._caught_up = max(self._caught_up, min(now, self._clock0 + t))

    def _when(self, event: object, now: float) -> float:
        """When ``event`` happened, on this process's clock (its arrival when unknown)."""
        t = getattr(event, "time", None)
        if self._clock0 is None or not isinstance(t, float | int) or isinstance(event, RunEnded):
            return now
        return min(now, self._clock0 + t)

    def _console(self, event: ConsoleOutput, now: float) -> None:
        if event.stream == "tfstudio":  # ours: on a line of its own
            text = terminal_words(event.text.removesuffix("\n"))
            self._hold(now, "line", "tfstudio: " + text)
            return
        text = event.text
        if event.stream in self._written and not event.native:  # Python's print and co.
            at = self._written[event.stream]
            self._written[event.stream] += len(text.encode("utf-8"))
            self._hold(now, event.stream, text, at)
            if self._marked:
                self._place_marked(now)
            return
        if event.stream == "stderr" and event.native and self._folding:
            kept = self.startup.feed(text)  # (collected for startup.log either way)
            if not self.verbose:
                text = kept
        if text:
            self._hold(now, event.stream, text)

    def _end_startup(self) -> list[tuple[str, str]]:
        """Training starts: TensorFlow's start-up is over; what to say of it, once."""
        if not self._folding:
            return []
        self._folding = False
        items = []
        rest = self.startup.flush()
        if rest and not self.verbose:
            items.append(("stderr", rest))
        n = len(self.startup.lines)
        if n and not self.verbose:
            items.append(
                (
                    "line",
                    f"tfstudio: TensorFlow started ({plural(n, 'start-up line')} hidden; "
                    "--verbose shows them)",
                )
            )
        return items

    def _device_line(self) -> list[tuple[str, str]]:
        """The device line, once it came (the start-up's line before it)."""
        if self._device is None:
            return []
        text, self._device = self._device, None
        return [*self._end_startup(), ("line", text)]

    def _place_marked(self, now: float) -> None:
        """Put the events whose mark the script's output has reached right at their mark;
        those that waited a second for it (output that never came), at their time."""
        waiting = []
        for arrived, mark, when, items in self._marked:
            if self._written["stdout"] >= mark[0] and self._written["stderr"] >= mark[1]:
                self._at_mark(mark, items, now)
            elif now - arrived > 1.0:
                for kind, what in items:
                    self._hold(when, kind, what)
            else:
                waiting.append((arrived, mark, when, items))
        self._marked = waiting

    def _at_mark(self, mark: tuple[int, int], items: list[tuple[str, str]], now: float) -> None:
        """Hold ``items`` right after the script's output up to ``mark`` (bytes of stdout,
        of stderr), splitting a piece of output that the mark falls inside; when all of
        that output is out already, before the output held (and what comes after ``now``)."""
        anchor: tuple[float, tuple[int, ...]] | None = None
        for stream, m in zip(("stdout", "stderr"), mark, strict=True):
            for i, (key, order, kind, what, at) in enumerate(self._held):
                if kind != stream or at is None:
                    continue
                data = what.encode("utf-8")
                if not at < m <= at + len(data):
                    continue
                if m < at + len(data):  # the mark is inside this piece: split it there
                    head = data[: m - at].decode("utf-8", "replace")
                    tail = data[m - at :].decode("utf-8", "replace")
                    self._held[i] = (key, order, kind, head, at)
                    self._held.append((key, (*order, 1), kind, tail, m))
                if anchor is None or (key, order) > anchor:
                    anchor = (key, order)
                break
        if anchor is None:  # what came before the mark is out: before what is held
            first = min((h[0] for h in self._held if h[4] is not None), default=None)
            anchor = (first, (-1,)) if first is not None else (now, (self._order,))
        key, order = anchor
        for j, (kind, what) in enumerate(items):
            self._held.append((key, (*order, 0, j), kind, what, None))

    def _lines(self, event: object, now: float) -> list[str]:
        """What tfstudio says of ``event`` (nothing for most)."""
        if isinstance(event, FitStarted):
            label = event.label()
            self._labels[event.fit_index] = label
            self._label = label
            if event.kind == "loop":
                return [f"tfstudio: {event.title()} (custom training loop)"]
            if event.verbose == 0:
                self._silent[event.fit_index] = event
            m = event.model
            params = f"{m.total_params:,} params" if m.built else "not built yet"
            spe = event.steps_per_execution
            first, last = event.initial_epoch + 1, event.epochs  # (resumed: Keras's numbers)
            epochs = plural(max(0, last - first + 1), "epoch")
            return [
                f"tfstudio: {label}: {m.name} ({m.class_name}, {params}), {epochs}"
                + (f" ({first}-{last} of {last})" if first > 1 and last >= first else "")
                + (f", steps_per_execution={spe}" if spe > 1 else "")
            ]
        if isinstance(event, ModelBuilt):
            label = self._labels.get(event.fit_index, f"fit {event.fit_index + 1}")
            return [f"tfstudio: {label}: model built: {event.total_params:,} params"]
        if isinstance(event, EpochEnded):
            self._epochs[event.fit_index] = event
            return []
        if isinstance(event, FitEnded):
            return self._fit_ended(event)
        if isinstance(event, EngineStatus) and event.state == "error":
            return [f"tfstudio: {event.detail}"]
        if isinstance(event, Advice):
            return [
                f"tfstudio: advice: {event.location() or '-'}: {event.describe()}  fix: {event.fix}"
            ]
        if isinstance(event, MonitorError):
            return [
                f"tfstudio: monitoring failed in {event.where} ({event.message}); "
                "training goes on without it"
            ]
        if isinstance(event, RunEnded):
            took = now - self.started
            ended = dataclasses.replace(event, time=max(took, event.time))
            return [*self._not_recorded(), "tfstudio: " + ended.summary()]
        return []

    def _fit_ended(self, event: FitEnded) -> list[str]:
        """A silent fit's one line at its end: epochs, steps and its last epoch's metrics."""
        started = self._silent.pop(event.fit_index, None)
        if started is None:
            return []
        last = self._epochs.get(event.fit_index)
        label = self._labels.get(event.fit_index, started.label())
        done = (last.epoch + 1 - started.initial_epoch) if last is not None else 0
        steps = event.global_step - started.global_step
        head = "stopped after" if event.stopped else "done:"
        text = f"tfstudio: {label} {head} {plural(done, 'epoch')}"
        if started.epochs and done != started.epochs - started.initial_epoch:
            text += f" of {started.epochs - started.initial_epoch}"
        text += f", {plural(steps, 'step')}"
        if last is not None and last.metrics:
            text += " - " + " - ".join(f"{k}: {format_value(v)}" for k, v in last.metrics.items())
        return [text]

    def _not_recorded(self) -> list[str]:
        """At the run's end: what the inspector was still waiting for, in the past tense."""
        if not self._inspector_waits or self._gradients:
            return []
        from tfstudio.core.inspector_store import gradients_not_recorded

        kept = "recorded" if self.run_dir else "sampled"
        why = gradients_not_recorded(self._inspector_waits)
        return [f"tfstudio: no gradients were {kept}: {why}"]

    # -- out to the terminal -------------------------------------------------------
    def _hold(self, when: float, kind: str, what: str, at: int | None = None) -> None:
        self._order += 1
        self._held.append((when, (self._order,), kind, what, at))

    def release(self, now: float | None = None, everything: bool = False) -> None:
        """Write what is due, in time order (``everything``: all that is held).

        Due: what is dated before the newest event that arrived, and what has waited
        :attr:`hold` seconds."""
        now = time.perf_counter() if now is None else now
        for kind, what in self._device_line():
            self._hold(now, kind, what)
        if self._marked:
            self._place_marked(now)
        if self._held:
            self._held.sort()
            due = len(self._held)
            if not everything:
                limit = max(self._caught_up, now - self.hold)
                due = next((i for i, h in enumerate(self._held) if h[0] > limit), due)
            ready, self._held = self._held[:due], self._held[due:]
            for _, _, kind, what, _ in ready:
                if kind == "line":
                    self._say(what)
                else:
                    self._script(kind, what)
        if self._waiting and (
            everything
            or not self.line.script_open
            or time.monotonic() - self.line.script_wrote_at >= IDLE_S
        ):
            waiting, self._waiting = self._waiting, []
            for text in waiting:
                self.line.print(text)
        if self.ended is None:
            self._progress(now)

    def _say(self, text: str) -> None:
        """Our line: now, or once the script's open line ends."""
        line = self.line
        if self._waiting or (line.script_open and time.monotonic() - line.script_wrote_at < IDLE_S):
            self._waiting.append(text)
        else:
            line.print(text)

    def _script(self, stream: str, text: str) -> None:
        """The script's output, as written; our waiting lines go in at its first line end."""
        line = self.line
        line.clear()
        target = self.out if stream == "stdout" else self.err
        shares = line.shares_terminal or target is self.err
        if self._waiting and shares and "\n" in text:
            cut = text.index("\n") + 1
            head, text = text[:cut], text[cut:]
            target.write(head)
            target.flush()
            line.script_wrote(head)
            waiting, self._waiting = self._waiting, []
            for note in waiting:
                line.print(note)
            if not text:
                return
        target.write(text)
        target.flush()
        if shares:
            line.script_wrote(text)

    def _progress(self, now: float) -> None:
        """The progress line: drawn in place on a terminal; off one, a silent fit's
        progress at most every :data:`LOG_EVERY_S`."""
        text = describe(self.tracker, self._label)
        if self.line.interactive:
            self.line.draw(text)
            return
        p = self.tracker.progress
        if p.fit_index in self._silent and now - self._logged >= LOG_EVERY_S:
            if self._logged:
                self._say(f"tfstudio: {text}")
            self._logged = now

    def finish(self) -> None:
        """Write everything still held; keep TensorFlow's start-up lines in the run folder."""
        now = time.perf_counter()
        for kind, what in self._end_startup():
            self._hold(now, kind, what)
        self._place_marked(now + 2.0)  # (output that never came will not come now)
        self.release(now, everything=True)
        self.save_startup()

    def save_startup(self) -> Path | None:
        """Write the folded start-up messages to the run folder (a local one); its path."""
        lines = self.startup.lines
        if not lines or not self.run_dir or "://" in self.run_dir:
            return None
        path = Path(self.run_dir) / STARTUP_LOG
        try:
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError:
            return None
        return path
