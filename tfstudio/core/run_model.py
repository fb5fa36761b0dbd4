"""One model of a run, owning everything a run shows; and the session that holds the models.

A :class:`RunModel` holds a run's parts, each with its own revision counter so a
view redraws only when its part moved:

- ``metrics``: the :class:`~tfstudio.core.run_store.RunStore` (per-step lines, epoch
  means, learning rate, segments, marks);
- ``inspector``: the inspector's samples (the same
  :class:`~tfstudio.core.inspector_store.InspectorStore` as ``metrics.inspector``);
- ``progress``: epoch, step, speed, time left, how the run ended
  (:class:`~tfstudio.core.progress.ProgressTracker`);
- ``system``: system samples, ``tag -> (seconds since the run started, values)``;
- ``console``: what the script printed, stdout and stderr interleaved, bounded;
- ``checkpoints``: the checkpoints saved (``metrics.checkpoints``);
- ``notices``: the advisor's and the engine's notices;
- ``hparams``: the run's hyperparameters, a flat ``str -> str | int | float | bool`` dict.

Two sources feed it through one entry point, :meth:`RunModel.apply`: a live
worker's events (the window's bridge hands every batch to the session's live
model) and a run folder (:meth:`RunModel.load` turns the folder into the same
events and columns: :mod:`tfstudio.core.run_loading` for the metrics,
:func:`tfstudio.core.recorded.inspector_events` for the inspector, and
``tfstudio.core.run_record.read_run_record`` / ``tfstudio.core.hparams.read_hparams``
for the console, system samples, checkpoints, notices and hyperparameters); a folder
read on a reader thread comes in through :meth:`RunModel.take_parts`
(:mod:`tfstudio.core.run_parts`). The console text and the system samples are kept by
:mod:`tfstudio.core.run_model_parts`.
Views never create models: a :class:`Session` owns them (the live run, the runs
picked) and each view is given the model it shows. Nothing here imports Qt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tfstudio.core.events import (
    Advice,
    CheckpointDeleted,
    CheckpointList,
    CheckpointRestored,
    CheckpointSaved,
    ConsoleOutput,
    DeviceMemory,
    EpochEnded,
    FitEnded,
    FitStarted,
    Notice,
    RunDevices,
    RunEnded,
    RunRecording,
    RunStarted,
    RunState,
    StepColumns,
    StepEnded,
    SystemSampled,
    step_batches,
)
from tfstudio.core.hparams import HParamValue
from tfstudio.core.locations import Location, location
from tfstudio.core.progress import Progress, ProgressTracker
from tfstudio.core.run_model_parts import (  # noqa: F401 - re-exported: a model's parts
    CONSOLE_MAX_CHARS,
    SYSTEM_MAX_SAMPLES,
    ConsoleText,
    SystemSamples,
)
from tfstudio.core.run_store import SERIES_CAPACITY, RunStore

PARTS = (
    "metrics",
    "inspector",
    "progress",
    "system",
    "console",
    "checkpoints",
    "notices",
    "hparams",
)
"""The parts of a run model, each with its own revision (:meth:`RunModel.revision`)."""

STREAMS = ("stdout", "stderr")  # the script's own output (not tfstudio's notes)


class RunModel:
    """Everything one run shows, fed by a live run's events or by its folder.

    Args:
        name: how views name the run (the folder's name, or the script's).
        path: the run's folder ("" for a live run not recorded, until it says where).
        capacity: buckets per per-step series (memory bound per line).
        smoothing: EMA weight of the metrics' smoothed twins.
        live: fed by a worker's events (the window's live run), not read from a folder.
        metrics: the metrics part when it exists already (a run the Runs panel reads
            chunk by chunk); a new store if None.
    """

    def __init__(
        self,
        name: str = "",
        path: str = "",
        capacity: int = SERIES_CAPACITY,
        smoothing: float = 0.0,
        live: bool = False,
        metrics: RunStore | None = None,
    ) -> None:
        self.live = live
        self.metrics = metrics if metrics is not None else RunStore(name, capacity, smoothing, path)
        self.progress_tracker = ProgressTracker()
        self.system = SystemSamples()
        self.system_from_worker = False  # the worker's SystemSampled events came
        self.console = ConsoleText()
        self.next_console: list[tuple[str, bool, str]] = []  # output after the run ended
        self.notices: list[Notice] = []
        self.advice: list[Advice] = []  # the live advisor's findings (the notices part)
        self.devices: RunDevices | None = None  # the progress part: what the run computes on
        self.device_memory: DeviceMemory | None = None  # TensorFlow's newest memory figures
        self.hparams: dict[str, HParamValue] = {}
        self.notes: list[str] = []  # parts that could not be read (say what and where)
        # A reopened run read on a reader thread (Session.open(wait=False)): True until its
        # first read is applied; its run.json status as last read ("running": followed).
        self.loading = False
        self.recorded_status = ""
        self._revisions = dict.fromkeys(PARTS, 0)
        self._settled = -1  # the metrics revision a reopened run's progress was read at

    # -- what it is ----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """How views name the run."""
        return self.metrics.name

    @property
    def path(self) -> str:
        """The run's folder ("" when not recorded)."""
        return self.metrics.path

    @property
    def inspector(self) -> Any:
        """The inspector's samples (``metrics.inspector``)."""
        return self.metrics.inspector

    @property
    def checkpoints(self) -> list[CheckpointSaved]:
        """The checkpoints saved, oldest first (deleted ones left out)."""
        return self.metrics.checkpoints

    @property
    def progress(self) -> Progress:
        """Where the run stands (or stood when it ended); a reopened run's from its metrics
        (its last segment, the step it reached, its last loss)."""
        if not self.live and self._settled != self.metrics.revision:
            self._settled = self.metrics.revision
            if self.metrics.fits:
                self._fit_progress(self.metrics.fits[-1])
            if self.metrics.ended is not None and not self.progress_tracker.progress.ended:
                self.progress_tracker.feed(self.metrics.ended)
        return self.progress_tracker.progress

    def revision(self, part: str) -> int:
        """A counter that moves whenever ``part`` (one of :data:`PARTS`) changed."""
        if part == "metrics":
            return self.metrics.revision
        if part == "inspector":
            return self.metrics.inspector.version
        return self._revisions[part]

    def touch(self, part: str) -> None:
        """Say ``part`` changed (a view of it redraws)."""
        if part == "metrics":
            self.metrics.revision += 1
        elif part == "inspector":
            self.metrics.inspector.version += 1
        else:
            self._revisions[part] += 1

    # -- the one entry point ---------------------------------------------------------------
    def apply(self, events: Iterable[object]) -> None:
        """Take events in order, from a live run or rebuilt from a folder.

        Consecutive steps go to the metrics as one block; every other event goes to
        each part it concerns (a restored checkpoint truncates the metrics and the
        inspector alike, the rule every view follows).
        """
        for event in step_batches(events):
            kind = type(event)
            if kind is list or kind is StepColumns:
                self._steps(event)
            elif (handler := _HANDLERS.get(kind)) is not None:
                handler(self, event)
            else:  # metrics and inspector events (unknown kinds are ignored)
                self.metrics.add_event(event)

    def _steps(self, steps: list[StepEnded] | StepColumns) -> None:
        self.metrics.add_steps(steps)
        tracker = self.progress_tracker
        if type(steps) is StepColumns:
            tracker.feed(steps)
        else:
            if tracker.wants_first_step and len(steps) > 1:
                tracker.feed(steps[0])  # the rate counts from the first step (a fit's trace)
            tracker.feed(steps[-1])
        self._revisions["progress"] += 1

    # -- the folder source -------------------------------------------------------------------
    def load(self, run_dir: str | Location, metrics: bool = True) -> None:
        """Fill the model from a run folder as it is now (reads on the calling thread).

        The folder is read by a :class:`~tfstudio.core.run_parts.PartsFeed` (its metrics
        as :func:`tfstudio.core.run_loading.load_folder` reads them, unless ``metrics`` is
        False: they come another way, the Runs panel's reader; its inspector samples
        through :func:`tfstudio.core.recorded.inspector_events`; the rest through
        ``read_run_record`` and ``read_hparams``) and applied by :meth:`take_parts`, as a
        :class:`Session` does with a read made on its reader thread.
        """
        from tfstudio.core.run_parts import PartsFeed

        self.take_parts(PartsFeed(run_dir, metrics=metrics).read())

    def take_parts(self, parts: Any) -> None:
        """Apply one read of the run's folder (a :class:`~tfstudio.core.run_parts.FolderParts`,
        read on any thread) on the thread that owns the model; each part that changed
        moves its revision (a followed run's parts are read again as it grows)."""
        from tfstudio.core.run_parts import adopt

        for batch in parts.batches:
            batch.apply(self.metrics)
        inspector = self.metrics.inspector
        if parts.inspector is not None:
            adopt(inspector, parts.inspector)
            for fit in self.metrics.fits:
                inspector.ingest(fit)
        over = parts.status != "running" or self.metrics.ended is not None
        if over and not inspector.ended:
            inspector.ended = True  # no sample will come: the views say why none came
            inspector.version += 1
        self.notes += parts.notes
        if parts.record is not None:
            self.take_record(parts.record)
        if parts.hparams is not None and parts.hparams != self.hparams:
            self.hparams = dict(parts.hparams)
            self.touch("hparams")
        if self.loading or parts.status != self.recorded_status:
            self.loading = False
            self.recorded_status = parts.status
            self.touch("progress")

    def take_record(self, record: Any) -> None:
        """A run folder's console, system samples, checkpoints and notices (a
        :class:`~tfstudio.core.run_record.RunRecord`); only the parts that changed move."""
        self.set_console_text(record.console)
        system = {tag: (np.asarray(t), np.asarray(v)) for tag, (t, v) in record.system.items()}
        if not _same_system(self.system.as_dict(), system):
            self.system.clear()
            for tag, (t, values) in system.items():
                self.system.set_series(tag, t, values)
            self.touch("system")
        checkpoints = list(record.checkpoints)
        if checkpoints != self.metrics.checkpoints:
            self.metrics.checkpoints[:] = checkpoints
            self.touch("checkpoints")
        # as live: the run's notices, and the advisor's findings apart
        notices = [n for n in record.notices if type(n) is Notice]
        advice = [n for n in record.notices if type(n) is Advice]
        if notices != self.notices or advice != self.advice:
            self.notices[:] = notices
            self.advice[:] = advice
            self.touch("notices")

    def read_hparams(self, run_dir: str | Location) -> None:
        """The hyperparameters recorded in a run folder (run.json or TensorBoard's HParams)."""
        from tfstudio.core.hparams import read_hparams

        try:
            hparams = read_hparams(str(run_dir))
        except Exception as exc:  # noqa: BLE001 - a damaged folder is said, not fatal
            self.notes.append(f"{run_dir}: its hyperparameters: {exc}")
            return
        if hparams != self.hparams:
            self.hparams = dict(hparams)
            self.touch("hparams")

    def set_console_text(self, text: str) -> None:
        """The console's whole text (a recorded run's ``output.log``). Text that only grew
        (a followed run) is added as a chunk of its own: a view appends it."""
        console = self.console
        old = console.text()
        if text == old and console.resets:
            return  # (set once already: a followed run that printed nothing new)
        if old and not console.dropped and text.startswith(old):
            console.add("stdout", text[len(old) :])
        else:
            console.set_text(text)
        self.touch("console")

    def add_system_sample(self, t: float, values: Mapping[str, float]) -> None:
        """One system sample ``t`` seconds into the run."""
        self.system.add(t, values)
        self.touch("system")

    def _fit_progress(self, fit: FitStarted) -> None:
        """A reopened run's progress: its last segment, at the step it reached."""
        tracker = self.progress_tracker
        ended = tracker.progress.ended
        tracker.feed(fit)
        p = tracker.progress
        p.epoch = max(p.epoch, len([s for s in self.metrics.epoch_steps if s > fit.global_step]))
        p.step = self.metrics.global_step - fit.global_step
        if p.steps_per_epoch and p.epochs:
            p.step -= (p.epoch - 1) * p.steps_per_epoch
        p.global_step = self.metrics.global_step
        p.loss = self.metrics.fit_loss.get(fit.fit_index)
        p.loss_key = "loss" if p.loss is not None else ""
        p.ended = ended
        self._revisions["progress"] += 1


# -- one handler per kind of event that concerns more than the metrics ------------------------
def _run_started(model: RunModel, e: RunStarted) -> None:
    again = model.metrics.started is not None  # a model used for a second run starts clean
    model.metrics.add_event(e)
    model.metrics.inspector.ingest(e)  # a new run: the samples of the last one go
    model.progress_tracker = ProgressTracker()
    if again:  # (what the worker printed before its RunStarted, its start-up lines, stays)
        model.console.clear()
    model.system.clear()
    model.system_from_worker = False
    model.notices.clear()
    model.advice.clear()
    model.devices = model.device_memory = None
    model.hparams = {}
    for part in ("progress", "console", "system", "notices", "hparams", "checkpoints"):
        model.touch(part)


def _run_ended(model: RunModel, e: RunEnded) -> None:
    model.metrics.add_event(e)
    model.metrics.inspector.ingest(e)
    model.progress_tracker.feed(e)
    model.touch("progress")
    if model.live and model.path:  # the recorder wrote them into run.json
        model.read_hparams(model.path)


def _fit_started(model: RunModel, e: FitStarted) -> None:
    model.metrics.add_event(e)
    model.metrics.inspector.ingest(e)
    model.progress_tracker.feed(e)
    model.touch("progress")


def _progress_and_metrics(model: RunModel, e: object) -> None:
    model.metrics.add_event(e)
    model.progress_tracker.feed(e)
    model.touch("progress")


def _restored(model: RunModel, e: CheckpointRestored) -> None:
    _progress_and_metrics(model, e)  # the store truncates its inspector too


def _saved(model: RunModel, e: CheckpointSaved) -> None:
    model.metrics.add_event(e)
    model.touch("checkpoints")


def _deleted(model: RunModel, e: CheckpointDeleted) -> None:
    kept = [c for c in model.metrics.checkpoints if c.path != e.path]
    if len(kept) != len(model.metrics.checkpoints):
        model.metrics.checkpoints[:] = kept
        model.touch("checkpoints")


def _listed(model: RunModel, e: CheckpointList) -> None:
    """The checkpoints the run's folder holds (sent when it is first used): the list."""
    model.metrics.checkpoints[:] = sorted(e.entries, key=_by_step)
    model.touch("checkpoints")


def _by_step(c: CheckpointSaved) -> tuple[int, float]:
    return c.step, c.wall_time


def _console(model: RunModel, e: ConsoleOutput) -> None:
    if e.stream not in STREAMS:  # tfstudio's own notes are the window's, not the script's
        return
    if model.metrics.ended is not None:  # the next run's worker (its start-up lines)
        model.next_console.append((e.stream, e.native, e.text))
        return
    model.console.add(e.stream, e.text, e.native)
    model.touch("console")


def _notice(model: RunModel, e: Notice) -> None:
    model.notices.append(e)
    model.touch("notices")


def _advice(model: RunModel, e: Advice) -> None:
    if e not in model.advice:  # a repeat of a finding is listed once
        model.advice.append(e)
        model.touch("notices")


def _devices(model: RunModel, e: RunDevices) -> None:
    model.devices = e
    model.touch("progress")


def _device_memory(model: RunModel, e: DeviceMemory) -> None:
    if e.available:
        model.device_memory = e
        model.touch("progress")


def _recording(model: RunModel, e: RunRecording) -> None:
    model.metrics.path = e.run_dir


def _system(model: RunModel, e: SystemSampled) -> None:
    """The worker's sample (``system/<name>`` in the model, as its folder records it). The
    worker's samples win: the window's own looks (a run whose worker does not sample)
    are dropped when the first one comes."""
    if not model.system_from_worker:
        model.system_from_worker = True
        model.system.clear()
    model.add_system_sample(e.time, {"system/" + k: v for k, v in e.values.items()})


def _same_system(
    a: Mapping[str, tuple[np.ndarray, np.ndarray]], b: Mapping[str, tuple[np.ndarray, np.ndarray]]
) -> bool:
    """Whether two sets of system samples are equal (tag by tag, times and values)."""
    return a.keys() == b.keys() and all(
        np.array_equal(a[k][0], b[k][0]) and np.array_equal(a[k][1], b[k][1], equal_nan=True)
        for k in a
    )


_HANDLERS: dict[type, Callable[[RunModel, Any], None]] = {
    RunStarted: _run_started,
    RunEnded: _run_ended,
    FitStarted: _fit_started,
    CheckpointRestored: _restored,
    CheckpointSaved: _saved,
    CheckpointDeleted: _deleted,
    CheckpointList: _listed,
    ConsoleOutput: _console,
    Notice: _notice,
    Advice: _advice,
    RunDevices: _devices,
    DeviceMemory: _device_memory,
    RunRecording: _recording,
    SystemSampled: _system,
    EpochEnded: _progress_and_metrics,
    FitEnded: _progress_and_metrics,
    RunState: _progress_and_metrics,
}

# The kinds that move a model's progress part (its progress, devices and device memory):
# what a view of it (the status bar, the System view) is handed.
PROGRESS_EVENTS: tuple[type, ...] = (
    StepEnded,
    RunStarted,
    RunEnded,
    RunDevices,
    DeviceMemory,
    FitStarted,
    EpochEnded,
    FitEnded,
    RunState,
    CheckpointRestored,
)


def register(kind: type, handler: Callable[[RunModel, Any], None]) -> None:
    """Route events of ``kind`` to ``handler(model, event)`` (a part another module adds)."""
    _HANDLERS[kind] = handler


class Session:
    """The run models the window shows: the live run's and the runs picked.

    Views never create models: they are given the session's. A new live run gets
    a new model. The session implements the bridge's panel protocol (``EVENTS``,
    ``ingest_steps``, ``ingest_event``, ``refresh``) and is registered before every
    view, so the live model has each event before any view draws.

    Args:
        capacity: buckets per per-step series of each model.
        smoothing: EMA weight of the models' smoothed twins.
    """

    EVENTS: tuple[type, ...] = ()  # set below: every kind a model takes

    def __init__(self, capacity: int = SERIES_CAPACITY, smoothing: float = 0.0) -> None:
        self.capacity = capacity
        self.smoothing = smoothing
        self.live = RunModel(capacity=capacity, smoothing=smoothing, live=True)
        self.opened: dict[str, RunModel] = {}  # run folder -> its model
        self.shown: RunModel = self.live  # the run the views show
        self.listeners: list[Callable[[RunModel], None]] = []  # told when ``shown`` changes
        self._reader: Any = None  # a PartsReader, made on the first read off this thread
        self._feeds: dict[str, Any] = {}  # run folder -> its PartsFeed (read off this thread)

    # -- the bridge's panel protocol: the session takes every event before any view draws --
    def ingest_steps(self, steps: Sequence[StepEnded] | StepColumns) -> None:
        """A run of steps (a block of columns, or consecutive step events) of the live run."""
        self.live.apply([steps] if type(steps) is StepColumns else steps)

    def ingest_event(self, event: object) -> None:
        """One event of the live run (a RunStarted begins a fresh live model)."""
        if type(event) is RunStarted:
            self.new_live()
        self.live.apply((event,))

    def refresh(self) -> None:
        """Nothing to draw: the views draw the models."""

    def apply(self, events: Iterable[object]) -> None:
        """A live run's events: a RunStarted begins a fresh live model."""
        batch = list(events)
        for i, event in enumerate(batch):
            if type(event) is RunStarted:
                if i:
                    self.live.apply(batch[:i])
                self.new_live()
                self.live.apply(batch[i:])
                return
        self.live.apply(batch)

    def new_live(self) -> RunModel:
        """A fresh model for the next live run (with what its worker printed before it
        started, after the last run ended); the views show it."""
        old = self.live
        before = old.next_console if old.metrics.started is not None else list(old.console.chunks)
        self.live = RunModel(capacity=self.capacity, smoothing=self.smoothing, live=True)
        for stream, native, text in before:
            self.live.console.add(stream, text, native)
        self.show(self.live)
        return self.live

    def open(
        self, run_dir: str | Location, metrics: RunStore | None = None, wait: bool = True
    ) -> RunModel:
        """The model of a run folder, read whole on first use (the same model after).

        Args:
            run_dir: the run folder.
            metrics: its metrics when read already (the Runs panel's store of it).
            wait: read it now, on this thread; False: on the session's reader thread,
                the model ``loading`` until :meth:`poll` applies the read (the window:
                a big run never pauses it).
        """
        path = location(run_dir)
        key = str(path)
        model = self.opened.get(key)
        if model is not None and metrics is not None and model.metrics is not metrics:
            model = None  # the Runs panel reads it again
            self._forget_feed(key)
        if model is None:
            model = RunModel(path.name, key, self.capacity, self.smoothing, metrics=metrics)
            self.opened[key] = model
            if wait:
                model.load(path, metrics=metrics is None)
            else:
                from tfstudio.core.run_parts import PartsFeed, PartsReader

                model.loading = True
                model.metrics.inspector.loading = True
                if self._reader is None:
                    self._reader = PartsReader()
                self._feeds[key] = feed = PartsFeed(path, metrics=metrics is None)
                self._reader.submit(feed)
        return model

    def follow(self, model: RunModel) -> bool:
        """Read a reopened run's folder again on the reader thread (what was appended: its
        metrics when the session reads them, inspector samples, console, system samples,
        checkpoints, notices, hyperparameters); :meth:`poll` applies it. False when no
        read was started (the model is not read off this thread, or a read is out)."""
        feed = self._feeds.get(model.path)
        if feed is None or self.opened.get(model.path) is not model or self._reader.busy(feed):
            return False
        return bool(self._reader.submit(feed))

    def reading(self) -> bool:
        """Whether a read is out on the reader thread (or finished and not applied yet)."""
        return self._reader is not None and self._reader.busy()

    def poll(self) -> list[RunModel]:
        """Apply the reads finished on the reader thread (call it on the models' thread);
        returns the models that took one."""
        if self._reader is None:
            return []
        changed = []
        for feed, parts in self._reader.take():
            key = str(feed.path)
            model = self.opened.get(key)
            if model is None or self._feeds.get(key) is not feed:
                continue  # closed or read afresh meanwhile
            if isinstance(parts, Exception):
                model.notes.append(f"cannot read {key}: {type(parts).__name__}: {parts}")
                model.loading = False
                model.metrics.inspector.loading = False
                model.touch("progress")
            else:
                model.metrics.inspector.loading = False
                model.take_parts(parts)
            changed.append(model)
        return changed

    def shutdown(self) -> None:
        """Stop the reader thread (a read in progress is cancelled)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._feeds.clear()

    def _forget_feed(self, key: str) -> None:
        feed = self._feeds.pop(key, None)
        if feed is not None:
            feed.cancel()

    def close(self, run_dir: str | Location) -> None:
        """Let go of a run folder's model (the live one is shown if it was)."""
        key = str(location(run_dir))
        self._forget_feed(key)
        model = self.opened.pop(key, None)
        if model is not None and model is self.shown:
            self.show(self.live)

    def show(self, model: RunModel) -> None:
        """Make ``model`` the run every view shows."""
        if model is self.shown:
            return
        self.shown = model
        for listener in list(self.listeners):
            listener(model)


def _model_events() -> tuple[type, ...]:
    """Every event kind a run model takes (its own handlers, the store's, the inspector's)."""
    from tfstudio.core import events as ev
    from tfstudio.core.run_store import _HANDLERS as STORE_HANDLERS

    inspector = (ev.WeightStats, ev.GradientStats, ev.LayerOutputs, ev.ModelTree)
    kinds = [StepEnded, *_HANDLERS, *STORE_HANDLERS, *inspector, ev.InspectorStatus]
    return tuple(dict.fromkeys(kinds))


Session.EVENTS = _model_events()
