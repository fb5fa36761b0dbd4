"""Run folders on disk: where they go, what they hold, and reading them back.

A run folder holds TensorBoard event files (``events.out.tfevents.*``) and
``run.json``. This module is pure Python and numpy (event files are read by
:mod:`tfstudio.core.eventfile`, with the ``tensorboard`` package's protobuf classes
for the records that need them), so the window can list, open and follow runs
without importing TensorFlow. It reads any TensorBoard log
directory, e.g. one written by Keras's ``TensorBoard`` callback or ``tf.summary``.

A runs directory or run folder may be a URL (``gs://bucket/runs``): see
:mod:`tfstudio.core.locations`. Local paths are handled by ``os`` as always.
"""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tfstudio.core.eventfile import Histogram as Histogram
from tfstudio.core.eventfile import TagColumns as TagColumns
from tfstudio.core.eventfile import tensor_values as tensor_values  # its old home
from tfstudio.core.locations import (
    GFileFS,
    Location,
    UnsupportedLocation,
    UrlPath,
    data_folder_for,
    fs_for,
    location,
)

# Reading event files lives in run_reading; its names stay importable from here.
from tfstudio.core.run_reading import (  # noqa: F401 (re-exported)
    EPOCH_PREFIX,
    EVENT_FILE_MARK,
    FRESH_S,
    GLANCE_BYTES,
    STEP_PREFIX,
    TAIL_BYTES,
    RunFolderReader,
    RunReader,
    TagPoints,
    _listing,
    _subdirs,
    event_files,
    glance,
    local_stamp,
    read_columns,
    read_scalars,
)

RUN_JSON = "run.json"
DEFAULT_DIRNAME = "tfstudio-runs"
USER_RUNS_DIRNAME = "runs"  # in the per-user data folder (locations.user_data_dir)
# Keras's running mean at each step of a metric with no per-step value of its own (AUC,
# precision: not means, so a batch's value cannot be derived), as the live plot draws it
RUNNING_PREFIX = "running/"
# A "running" run whose run.json has not been refreshed for this long is taken as dead
# (the writer refreshes it every few seconds, even while paused).
STALE_AFTER_S = 60.0
LOGDIR_ENV = "TFSTUDIO_LOGDIR"


# -- where runs go -----------------------------------------------------------
PathLike = str | os.PathLike[str] | UrlPath


def resolve_logdir(logdir: PathLike | None, run_cwd: str | os.PathLike[str]) -> Location:
    """The runs directory of a run: ``logdir`` if given, else ``<run_cwd>/tfstudio-runs``.

    ``$TFSTUDIO_LOGDIR``, when set, replaces the default. The window runs scripts
    in their own folder and the headless runner in the working directory, so the
    default lands beside the script or in the cwd. A URL (``gs://...``) stays a URL.
    Where ``run_cwd`` is installed code (a bundled example, site-packages) or not
    writable, the default is the per-user ``~/.local/share/tfstudio/runs``
    (``$XDG_DATA_HOME``): a user's data never goes into an installed package.
    """
    chosen = logdir or os.environ.get(LOGDIR_ENV)
    if chosen:
        return location(chosen, resolve=True)
    return data_folder_for(run_cwd, DEFAULT_DIRNAME, USER_RUNS_DIRNAME)


def new_run_dir(
    logdir: PathLike, script: str, when: float | None = None, fs: GFileFS | None = None
) -> Location:
    """Create and return a fresh ``<script-stem>-<YYYYmmdd-HHMMSS>`` folder in ``logdir``.

    ``fs``: how to reach a URL ``logdir`` (the worker passes TensorFlow's gfile).
    """
    stamp = datetime.fromtimestamp(time.time() if when is None else when).strftime("%Y%m%d-%H%M%S")
    base = location(logdir) / f"{Path(script).stem}-{stamp}"
    files = fs_for(base, fs)
    path, n = base, 1
    while True:
        try:
            files.mkdir_new(path)  # type: ignore[arg-type]
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")


def write_run_json(run_dir: PathLike, info: dict[str, Any], fs: GFileFS | None = None) -> None:
    """Replace ``run.json`` atomically (a reader never sees half a file)."""
    path = location(run_dir) / RUN_JSON
    data = json.dumps(info, indent=1, default=str).encode("utf-8")
    fs_for(path, fs).write_bytes(path, data)  # type: ignore[arg-type]


def read_run_json(run_dir: PathLike) -> dict[str, Any]:
    """``run.json`` of a run folder as a dict; empty when missing or unreadable."""
    path = location(run_dir) / RUN_JSON
    try:
        data = json.loads(fs_for(path).read_bytes(path).decode("utf-8"))  # type: ignore[arg-type]
    except UnsupportedLocation:
        raise
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# -- listing -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run folder as listed: what the runs panel and ``tfstudio runs`` show."""

    path: Location
    name: str
    script: str
    started: float | None
    status: str
    steps: int | None
    final_loss: float | None
    info: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def date(self) -> str:
        """Start time as ``YYYY-mm-dd HH:MM:SS`` (or ``?``)."""
        if self.started is None:
            return "?"
        return datetime.fromtimestamp(self.started).strftime("%Y-%m-%d %H:%M:%S")


def run_status(info: dict[str, Any], now: float | None = None) -> str:
    """Status from ``run.json``: a "running" run whose writer is gone is "interrupted"."""
    status = str(info.get("status") or "unknown")
    if status != "running":
        return status
    now = time.time() if now is None else now
    host, pid = info.get("hostname"), info.get("pid")
    if host == socket.gethostname() and isinstance(pid, int) and pid > 0:
        if not _pid_alive(pid):
            return "interrupted"
    updated = info.get("updated")
    if isinstance(updated, int | float) and now - updated > STALE_AFTER_S:
        return "interrupted"
    return status


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    # A zombie (killed, not yet reaped by its parent) is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def is_run_dir(path: PathLike) -> bool:
    """True for a tfstudio run folder or a TensorBoard log folder.

    A log folder holds event files itself or in its sub-folders (Keras's
    ``TensorBoard`` callback writes ``train/`` and ``validation/``).
    """
    p = location(path)
    try:
        if fs_for(p).isfile(p / RUN_JSON) or any(event_files(p)):  # type: ignore[arg-type]
            return True
    except UnsupportedLocation:
        raise
    except OSError:
        return False
    return any(any(event_files(sub)) for sub in _subdirs(p))


def list_runs(logdir: PathLike) -> list[RunInfo]:
    """The runs in a runs directory, oldest first (folders with run.json or event files).

    Raises :class:`UnsupportedLocation` for a URL no file system here can read.
    """
    root = location(logdir)
    if not fs_for(root).isdir(root):  # type: ignore[arg-type]
        return []
    folders = [p for p in _subdirs(root) if is_run_dir(p)]
    if folders and all(p.name in ("train", "validation") for p in folders):
        folders = [root]  # a Keras TensorBoard log_dir: one run, train/ and validation/ its halves
    runs = [describe_run(p) for p in folders]
    runs.sort(key=lambda r: (r.started or 0.0, r.name))
    return runs


def describe_run(run_dir: PathLike) -> RunInfo:
    """Summary of one run folder from its run.json (event files when there is none)."""
    p = location(run_dir)
    info = read_run_json(p)
    steps = info.get("steps")
    final_loss = info.get("final_loss")
    if not info:
        started, steps, final_loss = glance(p)
        return RunInfo(p, p.name, "", started, "tensorboard", steps, final_loss, info)
    started = info.get("start_time")
    return RunInfo(
        p,
        p.name,
        str(info.get("script") or ""),
        float(started) if isinstance(started, int | float) else None,
        run_status(info),
        int(steps) if isinstance(steps, int | float) else None,
        float(final_loss) if isinstance(final_loss, int | float) else None,
        info,
    )


def run_ending(info: dict[str, Any]) -> str:
    """How a recorded run ended, from its ``run.json``: the error that failed it (its type
    and where, a newline, its telling line) or the run's message ("" if none)."""
    from tfstudio.core.events import ScriptError

    error = info.get("error")
    if isinstance(error, dict) and error.get("type"):
        err = ScriptError(str(error["type"]), str(error.get("message") or ""), "", 0, "")
        return f"{err.type_name} at {error.get('where') or '?'}:\n{err.headline()}"
    return str(info.get("message") or "")


ENDING_CHARS = 160  # of a failed or stopped run's reason under its line in ``tfstudio runs``


def format_run_line(run: RunInfo) -> str:
    """One terminal line: name, status, steps, final loss, date; a run that did not finish
    gets a second, indented line: why (its error's type, where and telling line, clipped)."""
    steps = "-" if run.steps is None else str(run.steps)
    loss = "-" if run.final_loss is None else f"{run.final_loss:.4g}"
    line = f"{run.name:<36} {run.status:<12} {steps:>8} steps  loss {loss:<10} {run.date()}"
    why = " ".join(run_ending(run.info).split()) if run.status != "finished" else ""
    if why:
        if len(why) > ENDING_CHARS:
            why = why[: ENDING_CHARS - 3] + "..."
        line += f"\n    {why}"
    return line


def rename_run(run_dir: PathLike, new_name: str) -> Location:
    """Rename a run folder in place; returns the new path."""
    name = new_name.strip()
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise ValueError(f"not a valid folder name for a run: {new_name!r}")
    src = location(run_dir)
    dst = src.with_name(name)
    files = fs_for(src)
    if files.exists(dst):  # type: ignore[arg-type]
        raise FileExistsError(f"a run named {name!r} already exists in {src.parent}")
    files.rename(src, dst)  # type: ignore[arg-type]
    return dst


def delete_run(run_dir: PathLike) -> None:
    """Delete a run folder and everything in it (only a folder that looks like a run)."""
    p = location(run_dir)
    if not is_run_dir(p):
        raise ValueError(f"{p} is not a run folder (no run.json, no event files); not deleting it")
    fs_for(p).rmtree(p)  # type: ignore[arg-type]


# -- export ---------------------------------------------------------------------
def export_scalars_csv(run_dir: PathLike, out: str | os.PathLike[str]) -> int:
    """Write a run's scalars as CSV rows ``tag,step,value,wall_time``; returns the row count."""
    scalars = read_columns(run_dir)
    rows = 0
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerow(["tag", "step", "value", "wall_time"])
        for tag in sorted(scalars):
            c = scalars[tag]
            quoted = io.StringIO()
            csv.writer(quoted).writerow([tag])  # a tag with a comma or quote, quoted as csv does
            line = quoted.getvalue().rstrip("\r\n").replace("{", "{{").replace("}", "}}")
            row = (line + ",{},{!r},{:.6f}\r\n").format
            block = 1 << 16  # rows formatted at once: bounded memory for the text
            for i in range(0, len(c), block):
                s = c.steps[i : i + block].tolist()
                v = c.values[i : i + block].tolist()
                t = c.wall[i : i + block].tolist()
                f.write("".join(map(row, s, v, t)))
            rows += len(c)
    return rows
