"""``tfstudio.StudioCallback``: record a run from any script or notebook, without the app.

``model.fit(..., callbacks=[StudioCallback("runs")])`` writes the same run folder
the app writes (TensorBoard event files + ``run.json``), so a run on a GPU
server or a cluster can be opened or followed in tfstudio.

Under ``tf.distribute``: Keras calls callbacks once per step on the host with
values already reduced over replicas, so ``MirroredStrategy`` records one value
per step. Under ``MultiWorkerMirroredStrategy`` every worker runs the callback;
only the chief (``TF_CONFIG`` task ``chief``, or ``worker`` 0 when the cluster
has no chief) writes.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import keras

from tfstudio.core.channel import Channel
from tfstudio.core.events import RunEnded, RunStarted
from tfstudio.core.pump import Pump
from tfstudio.core.runs import resolve_logdir
from tfstudio.engine.callback import StudioCallback as _FitReporter
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.recorder import FLUSH_EVERY_S, Recorder

PUMP_INTERVAL_S = 0.1  # no viewer waits: a batch every 100 ms is enough for the recorder


def is_chief(tf_config: str | None = None) -> bool:
    """Whether this process writes under multi-worker training (from ``TF_CONFIG``).

    No ``TF_CONFIG`` (or no cluster): a single process, the chief. Otherwise the
    task ``chief``; or, in a cluster without a chief, ``worker`` 0. Evaluators
    and parameter servers never write.
    """
    raw = os.environ.get("TF_CONFIG") if tf_config is None else tf_config
    if not raw:
        return True
    try:
        config = json.loads(raw)
    except ValueError:
        return True
    cluster = config.get("cluster") or {}
    task = config.get("task") or {}
    kind, index = task.get("type"), int(task.get("index", 0) or 0)
    if not cluster or kind is None:
        return True
    if kind == "chief":
        return True
    if kind == "worker" and "chief" not in cluster:
        return index == 0
    return False


def _script_name() -> str:
    main = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if not main or main == "-c" or "ipykernel" in main:
        return "notebook.py"
    return main


class StudioCallback(keras.callbacks.Callback):
    """Records every ``fit`` it is passed to as one tfstudio run.

    Args:
        logdir: runs directory (default ``./tfstudio-runs`` or ``$TFSTUDIO_LOGDIR``);
            the run folder ``<script-stem>-<YYYYmmdd-HHMMSS>`` is made inside it.
        name: script name the run folder is named after (default: the running script).
        flush_every: seconds between flushes to disk.
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        flush_every: float = FLUSH_EVERY_S,
    ) -> None:
        super().__init__()
        self.logdir = resolve_logdir(logdir, os.getcwd())
        self.name = name or _script_name()
        self.flush_every = flush_every
        self.chief = is_chief()
        self.run_dir: Path | None = None
        self._channel = Channel()
        self._monitor = RunMonitor(self._channel)
        self._reporter: _FitReporter | None = None
        self._recorder: Recorder | None = None
        self._pump: Pump | None = None  # drains the channel into the recorder, per fit
        self._info: dict[str, Any] = {}

    # -- Keras plumbing: the fit reporter sees the same model and params ----
    def set_model(self, model: Any) -> None:
        """Keras hands us the model; the reporter shares it."""
        super().set_model(model)
        if self._reporter is not None:
            self._reporter.set_model(model)

    def set_params(self, params: dict) -> None:
        """Keras hands us fit's params; the reporter shares them."""
        super().set_params(params)
        if self._reporter is not None:
            self._reporter.set_params(params)

    def _start(self) -> None:
        self._recorder = Recorder.for_script(self.logdir, self.name, flush_every=self.flush_every)
        self.run_dir = self._monitor.run_dir = self._recorder.run_dir
        script = os.path.abspath(self.name)
        self._recorder.write(
            [
                RunStarted(
                    script, tuple(sys.argv) or (script,), os.getcwd(), time.time(), os.getpid()
                )
            ]
        )
        self._start_pump()

    def _start_pump(self) -> None:
        """The recorder becomes the sink of a pump of this fit (off the training thread)."""
        assert self._recorder is not None
        self._pump = Pump(self._channel, [self._recorder], interval=PUMP_INTERVAL_S)
        self._pump.start()

    def on_train_begin(self, logs: dict | None = None) -> None:
        """A fit begins: a new segment of this run (the run folder is made at the first)."""
        if not self.chief:
            return
        try:
            if self.run_dir is None:
                self._start()
            elif self._recorder is None:  # a later fit: same folder, next segment
                self._recorder = Recorder(
                    self.run_dir, flush_every=self.flush_every, info=self._info
                )
                self._start_pump()
            self._recorder.info.update(status="running", pid=os.getpid())
        except Exception as exc:  # noqa: BLE001 - recording must never stop training
            self.chief = False
            print(f"tfstudio: not recording ({exc!r})", file=sys.stderr)
            return
        self._reporter = _FitReporter(self._monitor, self._monitor.fits)
        self._monitor.fits += 1
        self._reporter.set_model(self.model)
        self._reporter.set_params(self.params)
        self._reporter.on_train_begin(logs)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        """Forwarded to the reporter."""
        if self._reporter is not None:
            self._reporter.on_epoch_begin(epoch, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Forwarded to the reporter."""
        if self._reporter is not None:
            self._reporter.on_epoch_end(epoch, logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Forwarded to the reporter (one small event per step)."""
        if self._reporter is not None:
            self._reporter.on_train_batch_end(batch, logs)

    def on_train_end(self, logs: dict | None = None) -> None:
        """The fit ended: record it and flush; the run stays open for another fit."""
        reporter, self._reporter = self._reporter, None
        if reporter is None or self._recorder is None or self._pump is None:
            return
        reporter.on_train_end(logs)
        mon = self._monitor
        self._channel.emit(RunEnded("finished", 0, mon.fits, mon.global_step, mon.now()))
        self._pump.close()  # the recorder writes the rest, RunEnded last, and closes
        self._info = dict(self._recorder.info)
        self._recorder = self._pump = None
