"""The runs table: one row per run, columns to compare them, filters, and its text forms.

Shared by the window's Runs panel and ``tfstudio runs``, so both show the same columns:

- the run: ``Name``, ``Script``, ``Date``, ``Status``, ``Steps``;
- per metric: ``NAME`` (its last epoch's mean: what Keras prints), ``NAME.best`` and
  ``NAME.best_step`` (see :mod:`tfstudio.core.run_summary`);
- one per hyperparameter (``optimizer``, ``batch_size``, ...); a hyperparameter named as
  a metric (``loss``: the loss function) is titled ``hp.loss``;
- ``Tags`` and ``Note`` (:mod:`tfstudio.core.run_notes`).

A filter (:func:`parse_filter`) is clauses joined by ``and``: ``COLUMN OP VALUE`` with
OP one of ``< <= > >= == != ~`` (``~``: contains), or plain text, which a run's name,
script, tags or note must contain. Column names are the titles, in any case.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfstudio.core.hparams import read_hparams
from tfstudio.core.run_notes import RunNotes, read_notes
from tfstudio.core.run_summary import MetricSummary, SummaryReader, format_value, summarize_run
from tfstudio.core.runs import ENDING_CHARS, RunInfo, run_ending

HParam = str | int | float | bool
Value = str | int | float | bool | None
PER_STEP_MARK = "*"
PER_STEP_NOTE = "* the run recorded no epochs: its last (and best) per-step value"
VERSION_KEYS = ("tensorflow", "keras")  # hidden unless asked for: rarely what differs
# shown even where every run has the same value: what a reader looks for first
KEY_HPARAMS = ("optimizer", "optimizer.learning_rate", "batch_size", "epochs")
MAX_CELL_CHARS = 40
NUMBER_TOLERANCE = 1e-6  # relative: figures recorded as float32 compare as they are shown


# -- hyperparameters --------------------------------------------------------------------
def run_hparams(run: RunInfo) -> dict[str, HParam]:
    """A run's hyperparameters, flat (``optimizer.learning_rate`` -> 0.001).

    :func:`tfstudio.core.hparams.read_hparams` (``run.json["hparams"]``, else a folder's
    TensorBoard HParams data); for a run recorded before hyperparameters were, what its
    run.json says (the first fit's epochs and steps per epoch, model, arguments).
    """
    try:
        found = read_hparams(run.path)
    except (OSError, ValueError):
        found = {}
    return dict(found) if found else derived_hparams(run.info)


def derived_hparams(info: dict[str, Any]) -> dict[str, HParam]:
    """What a run.json without ``hparams`` says of how the run was set up."""
    out: dict[str, HParam] = {}
    fits = [s for s in info.get("segments") or [] if isinstance(s, dict) and s.get("kind")]
    if fits:
        first = fits[0]
        for key, name in (("epochs", "epochs"), ("steps_per_epoch", "steps_per_epoch")):
            if isinstance(first.get(key), int):
                out[name] = first[key]
        if first.get("model"):
            out["model"] = str(first["model"])
        if first.get("class"):
            out["model.class"] = str(first["class"])
        if isinstance(first.get("params"), int) and first["params"]:
            out["model.params"] = first["params"]
    argv = info.get("argv")
    if isinstance(argv, list) and argv:
        out["args"] = " ".join(str(a) for a in argv[1:])
    return out


# -- rows ---------------------------------------------------------------------------------
@dataclass(slots=True)
class RunRow:
    """One run as the table shows it."""

    run: RunInfo
    hparams: dict[str, HParam] = field(default_factory=dict)
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    notes: RunNotes = field(default_factory=RunNotes)

    def as_json(self) -> dict[str, Any]:
        """One object of ``tfstudio runs --json``."""
        return {
            "name": self.run.name,
            "path": str(self.run.path),
            "script": self.run.script,
            "status": self.run.status,
            "started": self.run.started,
            "steps": self.run.steps,
            "hparams": dict(self.hparams),
            "metrics": {name: m.as_json() for name, m in self.metrics.items()},
            "tags": list(self.notes.tags),
            "note": self.notes.note,
        }


def run_row(run: RunInfo, metrics: dict[str, MetricSummary] | None = None) -> RunRow:
    """A run's row: its hyperparameters and notes read now; its metrics given or read now
    (reading every event file of the folder)."""
    if metrics is None:
        try:
            metrics = summarize_run(run.path)
        except OSError:
            metrics = {}
    try:
        notes = read_notes(run.path)
    except OSError:
        notes = RunNotes()
    return RunRow(run, run_hparams(run), metrics, notes)


class RowSource:
    """Rows of listed runs, read where it may take a while (the runs panel's own thread):
    hyperparameters, notes, and metric figures read on from where the last read of each
    folder ended (a live run costs only what it appended). One thread at a time."""

    def __init__(self) -> None:
        self._readers: dict[str, SummaryReader] = {}

    def row(self, run: RunInfo) -> RunRow:
        """``run``'s row as its folder is now."""
        key = str(run.path)
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = SummaryReader(run.path)
        try:
            metrics = reader.update()
        except OSError:
            metrics = reader.summaries()
        return run_row(run, metrics)

    def cancel(self) -> None:
        """Stop the reads in progress (from any thread): the owner is going away."""
        for reader in list(self._readers.values()):
            reader.folder.cancel()

    def keep(self, paths: Iterable[str]) -> None:
        """Forget the folders not listed any more."""
        wanted = set(paths)
        for key in [k for k in self._readers if k not in wanted]:
            del self._readers[key]


# -- columns ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Column:
    """One column: ``title`` (also its name in filters), what it shows, and how.

    ``kind``: "run" (``source`` a field of the run), "metric" (``source`` a metric,
    ``part`` one of last/best/best_step), "notes" (tags or note) or "hparam".
    """

    title: str
    kind: str
    source: str
    part: str = ""

    @property
    def numeric(self) -> bool:
        """Whether every value of the column is a number (sorted and compared as one)."""
        return self.kind == "metric" or (self.kind == "run" and self.source == "steps")

    def value(self, row: RunRow) -> Value:
        """The cell's value (None when the run has none)."""
        if self.kind == "metric":
            m = row.metrics.get(self.source)
            return None if m is None else getattr(m, self.part)
        if self.kind == "hparam":
            return row.hparams.get(self.source)
        if self.kind == "notes":
            return ", ".join(row.notes.tags) if self.source == "tags" else row.notes.note
        run = row.run
        if self.source == "name":
            return run.name
        if self.source == "script":
            return Path(run.script).name if run.script else ""
        if self.source == "date":  # as text: sorts and compares as the time
            return run.date() if run.started else None
        if self.source == "status":
            return run.status
        return run.steps

    def text(self, row: RunRow) -> str:
        """The cell as shown (a per-step figure marked with :data:`PER_STEP_MARK`)."""
        value = self.value(row)
        if value is None:
            return ""
        if self.kind == "metric":
            m = row.metrics[self.source]
            mark = PER_STEP_MARK if m.per_step and self.part != "best_step" else ""
            return format_value(value) + mark  # type: ignore[arg-type]
        if isinstance(value, float):
            return format_value(value)
        if self.kind == "notes" and self.source == "note":
            return " ".join(str(value).split())
        return str(value)

    def tooltip(self, row: RunRow) -> str:
        """What the cell means (a metric's source, a long note whole)."""
        if self.kind == "metric" and self.source in row.metrics:
            m = row.metrics[self.source]
            if m.per_step:
                return f"{self.source}: no epoch values recorded; figures from its per-step values"
            what = {"last": "the last epoch's mean", "best": "the best epoch mean"}
            return f"{self.source}: {what.get(self.part, 'the step of the best epoch mean')}"
        if self.kind == "notes" and self.source == "note":
            return row.notes.note
        if self.kind == "run" and self.source == "status":
            return run_ending(row.run.info)
        return ""


RUN_COLUMNS = (
    Column("Name", "run", "name"),
    Column("Script", "run", "script"),
    Column("Date", "run", "date"),
    Column("Status", "run", "status"),
    Column("Steps", "run", "steps"),
)
NOTES_COLUMNS = (Column("Tags", "notes", "tags"), Column("Note", "notes", "note"))


def metric_names(rows: Iterable[RunRow]) -> list[str]:
    """Every metric of these runs, loss first, each one before its ``val_``."""
    from tfstudio.core.run_summary import _ordered

    seen: list[str] = []
    for row in rows:
        seen.extend(n for n in row.metrics if n not in seen)
    return _ordered(seen)


def hparam_keys(rows: Iterable[RunRow]) -> list[str]:
    """Every hyperparameter of these runs, in the order the first run holding each has."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row.hparams))
    return list(seen)


def table_columns(rows: Sequence[RunRow]) -> list[Column]:
    """The columns of a table of these runs: the run's, its metrics', notes, hparams."""
    metrics = metric_names(rows)
    columns = list(RUN_COLUMNS)
    for name in metrics:
        columns.append(Column(name, "metric", name, "last"))
        columns.append(Column(f"{name}.best", "metric", name, "best"))
        columns.append(Column(f"{name}.best_step", "metric", name, "best_step"))
    taken = {c.title.lower() for c in (*columns, *NOTES_COLUMNS)}
    for key in _hparam_order(hparam_keys(rows)):
        title = f"hp.{key}" if key.lower() in taken else key
        columns.append(Column(title, "hparam", key))
    columns.extend(NOTES_COLUMNS)
    return columns


def _hparam_order(keys: list[str]) -> list[str]:
    """The optimizer, learning rate, batch size and epochs first (beside the metrics), the
    script's arguments and the versions last, the rest as recorded."""
    last = ("args", *VERSION_KEYS)

    def rank(key: str) -> tuple[int, int]:
        if key in KEY_HPARAMS:
            return (0, KEY_HPARAMS.index(key))
        return (2, last.index(key)) if key in last else (1, 0)

    return sorted(keys, key=rank)  # stable: the rest keep their order


def differing(rows: Sequence[RunRow], key: str) -> bool:
    """Whether hyperparameter ``key`` differs between these runs (missing counts)."""
    return len({repr(r.hparams.get(key)) for r in rows}) > 1


def default_visible(column: Column, rows: Sequence[RunRow]) -> bool:
    """Whether a column shows unless the user chose: the run's, metrics' last values, the
    best of the main validation metric, notes, the optimizer, learning rate, batch size
    and epochs, and the hyperparameters that differ between the runs."""
    if column.kind in ("run", "notes"):
        return True
    if column.kind == "metric":
        if column.part == "last":
            return True
        names = metric_names(rows)
        main = next((n for n in names if n.startswith("val_")), names[0] if names else "")
        return column.source == main
    if column.source in VERSION_KEYS:
        return False
    return column.source in KEY_HPARAMS or differing(rows, column.source)


# -- filters ------------------------------------------------------------------------------
class FilterError(ValueError):
    """A filter that cannot be applied; its message says what and where."""


OPERATORS = ("<=", ">=", "==", "!=", "<", ">", "=", "~")
CLAUSE = re.compile(r"^\s*([A-Za-z_][\w.\-/@]*)\s*(<=|>=|==|!=|<|>|=|~)\s*(.*?)\s*$")
AND = re.compile(r"\s+and\s+|\s*&&\s*", re.IGNORECASE)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def find_column(name: str, columns: Sequence[Column]) -> Column | None:
    """The column a filter names: by title (any case), or ``hp.KEY`` for a hyperparameter."""
    wanted = name.lower()
    for c in columns:
        if c.title.lower() == wanted:
            return c
    if wanted.startswith("hp."):
        for c in columns:
            if c.kind == "hparam" and c.source.lower() == wanted[3:]:
                return c
    return None


def _compare(op: str, have: Value, want: str, column: Column) -> bool:
    if have is None:
        return False
    if op == "~":
        return want.lower() in str(have).lower()
    number = _number(want)
    if isinstance(have, bool):
        have_num: float | None = None
        have = str(have).lower()
    elif isinstance(have, int | float):
        have_num = float(have)
    else:
        have_num = _number(have)
    if have_num is not None and number is not None:
        # as shown: a learning rate recorded as float32 (0.003000000026) equals 0.003
        same = math.isclose(have_num, number, rel_tol=NUMBER_TOLERANCE)
        below, above = have_num < number and not same, have_num > number and not same
    else:
        a, b = str(have).lower(), want.lower()
        same, below, above = a == b, a < b, a > b
    return {
        "==": same,
        "=": same,
        "!=": not same,
        "<": below,
        "<=": below or same,
        ">": above,
        ">=": above or same,
    }[op]


@dataclass(frozen=True, slots=True)
class RunFilter:
    """A parsed filter; :meth:`matches` says whether a run is kept."""

    text: str
    tests: tuple[Callable[[RunRow], bool], ...] = ()

    def matches(self, row: RunRow) -> bool:
        """True when every clause holds for ``row``."""
        return all(test(row) for test in self.tests)


def parse_filter(text: str, columns: Sequence[Column]) -> RunFilter:
    """Parse a filter (see the module's doc) against the table's columns.

    Raises :class:`FilterError` saying which clause is wrong and why.
    """
    tests: list[Callable[[RunRow], bool]] = []
    for clause in (c for c in AND.split(text.strip()) if c.strip()):
        m = CLAUSE.match(clause)
        if m is None:
            if any(op in clause for op in OPERATORS):
                raise FilterError(
                    f"filter {clause.strip()!r}: write COLUMN OP VALUE, e.g. val_loss < 0.3 "
                    f"(OP: {' '.join(OPERATORS)})"
                )
            words = clause.strip().lower()
            tests.append(lambda row, w=words: _text_matches(row, w))
            continue
        name, op, want = m.groups()
        want = want.strip().strip("'\"")
        if not want:
            raise FilterError(f"filter {clause.strip()!r}: no value after {op!r}")
        column = find_column(name, columns)
        if column is None:
            known = ", ".join(c.title for c in columns)
            raise FilterError(f"filter {clause.strip()!r}: no column {name!r} (columns: {known})")
        if column.numeric and op != "~" and _number(want) is None:
            raise FilterError(
                f"filter {clause.strip()!r}: {column.title} holds numbers; {want!r} is not one"
            )
        tests.append(lambda row, c=column, o=op, w=want: _compare(o, c.value(row), w, c))
    return RunFilter(text, tuple(tests))


def _text_matches(row: RunRow, words: str) -> bool:
    run = row.run
    haystack = [run.name, Path(run.script).name if run.script else "", row.notes.note]
    return any(words in s.lower() for s in [*haystack, *row.notes.tags])


# -- order and text -----------------------------------------------------------------------
def sort_rows(rows: Sequence[RunRow], column: Column, descending: bool = False) -> list[RunRow]:
    """Rows ordered by a column's values (numbers as numbers); runs without one last."""
    known = [r for r in rows if column.value(r) not in (None, "")]
    unknown = [r for r in rows if column.value(r) in (None, "")]

    def key(row: RunRow) -> tuple[int, float, str]:
        v = column.value(row)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return (0, float(v), "")
        n = _number(str(v))
        return (0, n, "") if n is not None else (1, 0.0, str(v).lower())

    return sorted(known, key=key, reverse=descending) + unknown


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def format_table(rows: Sequence[RunRow], columns: Sequence[Column]) -> str:
    """A fixed-width text table: a header, one line per run (a run that did not finish
    gets a second, indented line: why), and a note under a table with per-step figures."""
    texts = [[_clip(c.text(r)) for c in columns] for r in rows]
    widths = [
        max([len(c.title), *(len(t[i]) for t in texts)]) for i, c in enumerate(columns)
    ]  # fmt: skip
    right = [c.numeric for c in columns]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(w) if r else cell.ljust(w)
            for cell, w, r in zip(cells, widths, right, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line([c.title for c in columns])]
    for row, cells in zip(rows, texts, strict=True):
        out.append(line(cells))
        why = " ".join(run_ending(row.run.info).split()) if row.run.status != "finished" else ""
        if why:
            if len(why) > ENDING_CHARS:
                why = why[: ENDING_CHARS - 3] + "..."
            out.append(f"    {why}")
    shown_metrics = {c.source for c in columns if c.kind == "metric"}
    if any(m.per_step for r in rows for n, m in r.metrics.items() if n in shown_metrics):
        out.append(PER_STEP_NOTE)
    return "\n".join(out)


def rows_json(rows: Sequence[RunRow]) -> str:
    """``tfstudio runs --json``: a JSON list, one object per run."""
    return json.dumps([r.as_json() for r in rows], indent=1, default=str)
