"""Checkpoints of a live model: ``tf.train.Checkpoint(model, optimizer, step)`` + a manager.

A :class:`CheckpointStore` saves the model, its optimizer (slots and
``iterations``) and the run's step with ``tf.train.CheckpointManager``
(``max_to_keep``, ``keep_checkpoint_every_n_hours``), lists what it saved with
the step, time and loss at save, restores one into the live objects and
deletes one.

Atomicity: TensorFlow writes a checkpoint's data into a temporary folder and
renames it into place, then rewrites the ``checkpoint`` state file with an
atomic rename; our own index (``tfstudio-checkpoints.json``) is written the same
way (temp file + atomic replace) and only after the checkpoint is complete. A
process killed in the middle of a save leaves the previous checkpoint as the
latest, readable one (tested with SIGKILL in tests/engine/test_checkpoints.py).
What such a kill leaves behind (TensorFlow's ``ckpt-N_temp`` folder, data files
whose ``.index`` was never written) is removed when a store next opens the
folder, and a prefix inside a ``_temp`` folder is never resolved for a restore.

Restore validates first: every variable the live objects would read must be in
the checkpoint with the same shape and dtype, or nothing is assigned and the
refusal names what does not match.

The folder is a local path or a URL (``gs://...``, ``s3://...``: a run recorded to a
bucket keeps its checkpoints there). TensorFlow writes the checkpoints through its own
file systems; the folder and our index go through :mod:`tfstudio.core.locations`, as
the recorder's files do (``os`` for a local path, ``tf.io.gfile`` for a URL).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfstudio.core.events import CheckpointSaved
from tfstudio.core.locations import UrlPath, data_folder_for, fs_for, location

INDEX_FILE = "tfstudio-checkpoints.json"
PREFIX = "ckpt"
TEMP_MARK = "_temp"  # TensorFlow saves into ``<prefix>_temp/part-...``, then merges and renames
_UNFINISHED = re.compile(rf"{PREFIX}-\d+{TEMP_MARK}")  # ckpt-3_temp, ckpt-3_temp_<hex>
_NUMBERED = re.compile(rf"{PREFIX}-\d+")


class CheckpointMismatch(ValueError):
    """A checkpoint does not fit the live model/optimizer; the message names the difference."""


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore brought back."""

    path: str
    step: int
    optimizer_iterations: int


def default_directory(script: str | os.PathLike[str], started: float | None = None) -> Path:
    """``tfstudio-checkpoints/<script>-<YYYYmmdd-HHMMSS>/`` beside the script.

    Beside a bundled example (installed code) or in a read-only folder: in the per-user
    ``~/.local/share/tfstudio/checkpoints/`` instead.
    """
    script = Path(script)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started or time.time()))
    parent = data_folder_for(script.resolve().parent, "tfstudio-checkpoints", "checkpoints")
    return parent / f"{script.stem}-{stamp}"


def resolve(path: str | os.PathLike[str]) -> str:
    """A checkpoint prefix from a prefix or a folder (meaning its latest checkpoint).

    Raises:
        FileNotFoundError: nothing restorable at ``path``.
    """
    import tensorflow as tf

    text = str(path)
    if _in_partial_save(text):
        raise FileNotFoundError(
            f"no checkpoint at {text}: it is part of a save that never completed (TensorFlow's "
            f"temporary '{TEMP_MARK}' folder, left by a run killed while saving)"
        )
    if tf.io.gfile.isdir(text):
        latest = tf.train.latest_checkpoint(text)
        if latest is None:
            raise FileNotFoundError(f"no checkpoint in folder {text} (no 'checkpoint' file)")
        return latest
    if tf.io.gfile.exists(text + ".index"):
        return text
    raise FileNotFoundError(
        f"no checkpoint at {text}: expected a prefix like .../ckpt-3 (with ckpt-3.index beside "
        "it) or a folder of checkpoints"
    )


class CheckpointStore:
    """Saves, lists, restores and deletes checkpoints of one model + optimizer + step.

    Args:
        directory: the run's checkpoint folder, a path or a URL (made by the first save).
        model: the live Keras model.
        optimizer: its optimizer (None: the model's weights and the step only).
        max_to_keep: checkpoints kept; older ones are deleted.
        keep_checkpoint_every_n_hours: additionally keep one per this many hours.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | UrlPath,
        model: Any,
        optimizer: Any = None,
        *,
        max_to_keep: int = 5,
        keep_checkpoint_every_n_hours: float | None = None,
    ) -> None:
        import tensorflow as tf

        from tfstudio.engine.recorder import tf_fs

        self.directory = location(directory)
        self._fs = fs_for(self.directory, tf_fs())
        self.model = model
        self.optimizer = optimizer
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="tfstudio_step")
        objects: dict[str, Any] = {"model": model, "step": self.step}
        if optimizer is not None:
            objects["optimizer"] = optimizer
        self.checkpoint = tf.train.Checkpoint(**objects)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint,
            str(self.directory),
            max_to_keep=max_to_keep,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            checkpoint_name=PREFIX,
        )
        self._index: dict[str, CheckpointSaved] = {}
        # why the last save's side index (times, losses) was not written; None: it was
        self.index_error: BaseException | None = None
        self.removed_partials = remove_partial_saves(self.directory, self.manager.checkpoints)
        self._load_index()

    # -- saving --------------------------------------------------------
    def build_optimizer(self) -> None:
        """Create the optimizer's slots now, so its state is saved and restored at once."""
        opt = self.optimizer
        if opt is not None and not getattr(opt, "built", True):
            opt.build(self.model.trainable_variables)

    def save(
        self, step: int, run_time: float = 0.0, loss: float = math.nan, automatic: bool = False
    ) -> CheckpointSaved:
        """Write a checkpoint of the live state at ``step``; returns its record."""
        self.build_optimizer()
        self._fs.makedirs(self.directory)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        self.step.assign(int(step))
        try:
            path = self.manager.save(checkpoint_number=int(step))
        except Exception:
            self._remove_partial(int(step))  # a full disk keeps what room there is
            raise
        seconds = time.perf_counter() - t0
        record = CheckpointSaved(
            path=str(path),
            step=int(step),
            time=float(run_time),
            loss=float(loss),
            wall_time=time.time(),
            seconds=seconds,
            automatic=automatic,
        )
        self._index[record.path] = record
        try:
            self._write_index()
            self.index_error = None
        except Exception as exc:  # noqa: BLE001 - the checkpoint is whole: TensorFlow's manager
            # wrote and lists it; its side index (time, loss) is written with the next save
            self.index_error = exc
        return record

    def _remove_partial(self, number: int) -> None:
        """Remove what a failed save of checkpoint ``number`` left (never a listed checkpoint)."""
        import tensorflow as tf

        prefix = str(self.directory / f"{PREFIX}-{number}")
        if prefix in self.manager.checkpoints:
            return
        for name in tf.io.gfile.glob(prefix + ".*") + tf.io.gfile.glob(prefix + "_temp*"):
            try:
                _remove(name)
            except Exception:  # noqa: BLE001 - best effort: the refusal is reported anyway
                pass

    def entries(self) -> list[CheckpointSaved]:
        """The checkpoints still on disk, oldest first.

        A checkpoint TensorFlow's manager lists is listed even without a record in our
        side index (a run killed between the two writes, or a full disk at the second):
        its step is read from its name, its wall time from TensorFlow's state file, its loss
        and run time unknown. The order is the manager's.
        """
        import tensorflow as tf

        kept = self.manager.checkpoints
        for path in list(self._index):
            if path not in kept and not tf.io.gfile.exists(path + ".index"):
                del self._index[path]
        unrecorded = [path for path in kept if path not in self._index]
        if unrecorded:
            saved_at = _save_times(str(self.directory))
            for path in unrecorded:
                if tf.io.gfile.exists(path + ".index"):
                    self._index[path] = _unrecorded(path, saved_at.get(path, math.nan))
        order = {path: i for i, path in enumerate(kept)}  # the manager's, oldest first
        return sorted(
            self._index.values(), key=lambda r: (order.get(r.path, -1), r.wall_time, r.step)
        )

    # -- restoring -----------------------------------------------------
    def validate(self, path: str) -> None:
        """Raise CheckpointMismatch naming what in ``path`` does not fit the live objects."""
        import tensorflow as tf

        self.build_optimizer()
        try:
            reader = tf.train.load_checkpoint(path)
        except Exception as exc:  # noqa: BLE001 - unreadable is a refusal, not a crash
            raise CheckpointMismatch(
                f"cannot read checkpoint {path}: its index file {path}.index is missing or "
                f"corrupt ({_first_line(exc)})"
            ) from exc
        stored_shapes = reader.get_variable_to_shape_map()
        stored_types = reader.get_variable_to_dtype_map()
        missing: list[str] = []
        wrong: list[str] = []
        live = self._live_variables()
        for key, (name, shape, dtype) in live.items():
            if key not in stored_shapes:
                missing.append(name)
                continue
            if tuple(stored_shapes[key]) != tuple(shape):
                stored = tuple(stored_shapes[key])
                wrong.append(f"{name}: checkpoint {stored}, model {tuple(shape)}")
            elif dtype is not None and stored_types[key] != dtype:
                wrong.append(f"{name}: checkpoint {stored_types[key].name}, model {dtype.name}")
        if not missing and not wrong:
            _read_every_tensor(reader, path, list(live))
        if missing or wrong:
            parts = []
            if wrong:
                parts.append(f"{len(wrong)} with other shapes or types ({'; '.join(wrong[:5])})")
            if missing:
                parts.append(f"{len(missing)} not in the checkpoint ({', '.join(missing[:5])})")
            raise CheckpointMismatch(
                f"checkpoint {path} does not match the live model: " + "; ".join(parts)
            )

    def restore(self, path: str) -> Restored:
        """Validate, then load ``path`` into the live model, optimizer and step (bit-exact)."""
        path = resolve(path)
        self.validate(path)
        status = self.checkpoint.restore(path)
        status.assert_existing_objects_matched()
        iterations = self.optimizer.iterations if self.optimizer is not None else None
        return Restored(
            path=path,
            step=int(self.step.numpy()),
            optimizer_iterations=int(iterations.numpy()) if iterations is not None else 0,
        )

    def _live_variables(self) -> dict[str, tuple[str, tuple[int, ...], Any]]:
        """Checkpoint key -> (readable name, shape, dtype) of every live variable."""
        serialized = self.checkpoint._saver._gather_serialized_tensors(None)[0]  # noqa: SLF001
        out: dict[str, tuple[str, tuple[int, ...], Any]] = {}
        for trackable, tensors in serialized.items():
            shape = getattr(trackable, "shape", None)
            dtype = getattr(trackable, "dtype", None)
            name = _readable_name(trackable)
            for key in tensors:
                if key.startswith("_CHECKPOINTABLE_OBJECT_GRAPH"):
                    continue
                if shape is None:
                    continue  # not a plain variable (e.g. a lookup table): checked on restore
                out[key] = (name or key, tuple(shape), getattr(dtype, "base_dtype", dtype))
        return out

    # -- deleting ------------------------------------------------------
    def delete(self, path: str) -> None:
        """Remove one checkpoint's files and forget it (the state file is rewritten atomically)."""
        import tensorflow as tf

        if path not in self.manager.checkpoints and not tf.io.gfile.exists(path + ".index"):
            raise FileNotFoundError(f"no checkpoint at {path}")
        remaining = [p for p in self.manager.checkpoints if p != path]
        for name in tf.io.gfile.glob(path + ".*"):
            tf.io.gfile.remove(name)
        _update_state(self.manager, remaining)
        self._index.pop(path, None)
        self._write_index()

    # -- index ---------------------------------------------------------
    def _load_index(self) -> None:
        import tensorflow as tf

        try:
            data = json.loads(self._fs.read_bytes(self.directory / INDEX_FILE))  # type: ignore[arg-type]
        except (OSError, ValueError):
            return
        for item in data.get("checkpoints", []):
            try:
                record = CheckpointSaved(**item)
            except TypeError:
                continue
            if tf.io.gfile.exists(record.path + ".index"):
                self._index[record.path] = record

    def _write_index(self) -> None:
        records = [_record_dict(r) for r in sorted(self._index.values(), key=lambda r: r.step)]
        data = json.dumps({"checkpoints": records}, indent=1).encode()
        # locally a temp file and an atomic replace; a bucket replaces the whole object
        self._fs.write_bytes(self.directory / INDEX_FILE, data)  # type: ignore[arg-type]


def _in_partial_save(path: str) -> bool:
    """Whether ``path`` lies in (or is) a ``ckpt-N_temp`` folder of an unfinished save."""
    parts = path.replace("\\", "/").rstrip("/").split("/")
    return any(_UNFINISHED.match(p) for p in parts)


def remove_partial_saves(
    directory: str | os.PathLike[str] | UrlPath,
    listed: list[str] | None = None,
    before: float | None = None,
) -> list[str]:
    """Remove what saves that never completed left in ``directory``; returns what was removed.

    A run killed while saving leaves TensorFlow's ``ckpt-N_temp`` folder (its shards, even
    a readable index of them), or ``ckpt-N.data-*`` files without ``ckpt-N.index``. None of
    them is a checkpoint: they are never listed nor restored, and removed here so they do
    not pile up. Only what was last changed before ``before`` (default: now) is touched,
    and never a checkpoint in ``listed`` (the manager's list).

    Args:
        directory: a checkpoint folder (a path or a URL).
        listed: checkpoint prefixes the folder's state file lists (kept whatever they hold).
        before: a Unix time; anything modified later may belong to a save under way.
    """
    import tensorflow as tf

    folder = str(directory).rstrip("/")
    if not tf.io.gfile.isdir(folder):
        return []
    keep = {os.path.basename(p) for p in listed or ()}
    cutoff = time.time() if before is None else before
    try:
        names = tf.io.gfile.listdir(folder)
    except Exception:  # noqa: BLE001 - an unreadable folder: saving will say why
        return []
    names = [n.rstrip("/") for n in names]
    present = set(names)
    removed: list[str] = []
    for name in sorted(names):
        stem = name.split(".")[0]
        unfinished = bool(_UNFINISHED.match(name))
        orphan_data = (
            bool(_NUMBERED.fullmatch(stem))
            and ".data-" in name
            and f"{stem}.index" not in present
            and stem not in keep
        )
        if not (unfinished or orphan_data):
            continue
        path = f"{folder}/{name}"
        try:
            if tf.io.gfile.stat(path).mtime_nsec / 1e9 > cutoff:
                continue
            _remove(path)
        except Exception:  # noqa: BLE001 - best effort: it is never offered anyway
            continue
        removed.append(path)
    return removed


def _remove(path: str) -> None:
    """Delete a file or a folder (``tf.io.gfile``: a local path or a URL alike)."""
    import tensorflow as tf

    if tf.io.gfile.isdir(path):
        tf.io.gfile.rmtree(path)
    else:
        tf.io.gfile.remove(path)


def _update_state(manager: Any, remaining: list[str]) -> None:
    """Rewrite a CheckpointManager's list and its ``checkpoint`` state file (atomic rename)."""
    import collections

    from tensorflow.python.checkpoint import checkpoint_management

    kept = collections.OrderedDict(
        (p, t)
        for p, t in manager._maybe_delete.items()  # noqa: SLF001
        if p in remaining
    )
    manager._maybe_delete = kept  # noqa: SLF001
    latest = next(reversed(kept)) if kept else None
    manager._latest_checkpoint = latest  # noqa: SLF001
    checkpoint_management.update_checkpoint_state_internal(
        manager.directory,
        model_checkpoint_path=latest or "",
        all_model_checkpoint_paths=list(kept),
        all_model_checkpoint_timestamps=list(kept.values()),
        last_preserved_timestamp=manager._last_preserved_timestamp,  # noqa: SLF001
        save_relative_paths=True,
    )


def _read_every_tensor(reader: Any, path: str, keys: list[str]) -> None:
    """Read (and so checksum) every tensor a restore would load, before anything is assigned.

    A restore assigns variable after variable: a corrupt byte found half-way would
    leave the model half restored. Reading first keeps the refusal clean.
    """
    import tensorflow as tf

    for key in ["_CHECKPOINTABLE_OBJECT_GRAPH", *keys]:
        try:
            reader.get_tensor(key)
        except Exception as exc:  # noqa: BLE001 - any failure to read is a refusal
            shards = sorted(tf.io.gfile.glob(path + ".data-*")) or [path + ".data-*"]
            raise CheckpointMismatch(
                f"checkpoint {path} is corrupt: {', '.join(shards)} cannot be read "
                f"({key}: {_first_line(exc)}); the model was left as it was"
            ) from exc


def _save_times(directory: str) -> dict[str, float]:
    """When TensorFlow's manager saved each checkpoint it lists (its ``checkpoint`` state file)."""
    import tensorflow as tf

    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return {}
    times = state.all_model_checkpoint_timestamps  # may be shorter: a state file by hand
    return dict(zip(state.all_model_checkpoint_paths, times, strict=False))


def _unrecorded(path: str, wall_time: float) -> CheckpointSaved:
    """The record of a whole checkpoint our side index never got, from what TensorFlow kept."""
    number = path.rsplit("-", 1)[-1]
    return CheckpointSaved(
        path=path,
        step=int(number) if number.isdigit() else 0,
        time=math.nan,
        loss=math.nan,
        wall_time=wall_time,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _record_dict(record: CheckpointSaved) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__slots__}


def _readable_name(trackable: Any) -> str:
    for attr in ("path", "name"):
        value = getattr(trackable, attr, None)
        if isinstance(value, str) and value:
            return value.removesuffix(":0")
    return ""
