"""Checks on a user's script path before anything runs."""

from __future__ import annotations

import os
from pathlib import Path

PYTHON_SUFFIXES = (".py", ".pyw")


class ScriptPathError(ValueError):
    """The path cannot be run as a Python script; the message says why."""


def check_script(path: str | os.PathLike[str]) -> Path:
    """Return the absolute path of a runnable Python script.

    Raises:
        ScriptPathError: missing, a folder, unreadable, or not a Python file.
    """
    p = Path(path).expanduser()
    shown = str(path)
    if not p.exists():
        raise ScriptPathError(f"No such file: {shown}")
    if p.is_dir():
        raise ScriptPathError(f"{shown} is a folder; expected a Python script (.py file)")
    if p.suffix.lower() not in PYTHON_SUFFIXES:
        got = p.suffix or "no extension"
        raise ScriptPathError(f"{shown} is not a Python script: expected a .py file, got '{got}'")
    try:
        with open(p, "rb") as f:
            head = f.read(8192)
    except OSError as exc:
        raise ScriptPathError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    if b"\0" in head:
        raise ScriptPathError(f"{shown} is not a Python script: it holds binary data")
    return p.resolve()
