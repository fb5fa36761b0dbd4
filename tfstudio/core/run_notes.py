"""Tags and a free-text note per run, kept in the run folder's ``notes.json``.

``{"tags": [str, ...], "note": str}``: never inside ``run.json``, which the recorder
rewrites while a run lasts. Written atomically (a reader never sees half a file).
A missing or unreadable ``notes.json`` reads as no tags and no note.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from tfstudio.core.locations import UnsupportedLocation, UrlPath, fs_for, location

NOTES_JSON = "notes.json"
MAX_TAG_CHARS = 64


@dataclass(frozen=True, slots=True)
class RunNotes:
    """A run's tags (in the order given, no duplicates) and its note."""

    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str = ""

    def as_json(self) -> dict[str, object]:
        """The ``notes.json`` object."""
        return {"tags": list(self.tags), "note": self.note}


def parse_tags(text: str | Iterable[str]) -> tuple[str, ...]:
    """Tags from ``"best, lr sweep"`` (comma-separated) or a list: stripped, empty ones and
    repeats dropped. Raises ValueError for a tag longer than :data:`MAX_TAG_CHARS`."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    tags: list[str] = []
    for part in parts:
        tag = " ".join(str(part).split())
        if len(tag) > MAX_TAG_CHARS:
            raise ValueError(f"tag too long ({len(tag)} characters, at most {MAX_TAG_CHARS}): "
                             f"{tag[:20]!r}...")  # fmt: skip
        if tag and tag not in tags:
            tags.append(tag)
    return tuple(tags)


def read_notes(run_dir: str | os.PathLike[str] | UrlPath) -> RunNotes:
    """A run folder's tags and note (none when ``notes.json`` is missing or unreadable)."""
    path = location(run_dir) / NOTES_JSON
    try:
        data = json.loads(fs_for(path).read_bytes(path).decode("utf-8"))  # type: ignore[arg-type]
    except UnsupportedLocation:
        raise
    except (OSError, ValueError):
        return RunNotes()
    if not isinstance(data, dict):
        return RunNotes()
    raw_tags = data.get("tags")
    tags = [t for t in raw_tags if isinstance(t, str)] if isinstance(raw_tags, list) else []
    note = data.get("note")
    try:
        parsed = parse_tags(tags)
    except ValueError:
        parsed = tuple(t[:MAX_TAG_CHARS] for t in tags if t.strip())
    return RunNotes(parsed, note if isinstance(note, str) else "")


def write_notes(
    run_dir: str | os.PathLike[str] | UrlPath, tags: str | Iterable[str], note: str
) -> RunNotes:
    """Replace a run folder's ``notes.json``; returns what was written.

    Raises ValueError for a bad tag, OSError when the folder cannot be written.
    """
    folder = location(run_dir)
    files = fs_for(folder)
    if not files.isdir(folder):  # type: ignore[arg-type]
        raise OSError(f"no such run folder: {folder}")
    notes = RunNotes(parse_tags(tags), note.strip())
    data = json.dumps(notes.as_json(), indent=1, ensure_ascii=False).encode("utf-8")
    files.write_bytes(folder / NOTES_JSON, data)  # type: ignore[arg-type]
    return notes
