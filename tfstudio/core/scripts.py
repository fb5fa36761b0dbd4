"""Checks on a user's script path before anything runs."""

from __future__ import annotations

import os
import re
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


# Environment variables TensorFlow (and CUDA, XLA, Keras) read when they are imported.
IMPORT_TIME_ENV_PREFIXES = ("TF_", "CUDA_", "KERAS_", "XLA_")
_ENV_WRITE = re.compile(
    r"""(?:environ\s*\[\s*|environ\s*\.\s*setdefault\s*\(\s*|putenv\s*\(\s*)"""
    r"""[rbuRBU]?(['"])((?:TF_|CUDA_|KERAS_|XLA_)\w*)\1"""
)
_ENV_UPDATE = re.compile(r"""environ\s*\.\s*update\s*\(""")
_ENV_KEY = re.compile(r"""(['"]?)\b((?:TF_|CUDA_|KERAS_|XLA_)\w*)\1\s*[:=]""")


def import_time_env_writes(path: str | os.PathLike[str]) -> list[str]:
    """Environment variables read at TensorFlow's import that the script sets itself.

    Found by reading the source (``os.environ["TF_..."] = ...``, ``setdefault``,
    ``update``, ``putenv``). A script that sets any of them needs a fresh worker
    that has not imported TensorFlow yet. Returns the names, sorted; empty when
    none (or the file cannot be read).
    """
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    names = {m.group(2) for m in _ENV_WRITE.finditer(source)}
    for update in _ENV_UPDATE.finditer(source):
        window = source[update.end() : update.end() + 2000]
        depth, end = 1, len(window)
        for i, ch in enumerate(window):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                end = i
                break
        names.update(m.group(2) for m in _ENV_KEY.finditer(window[:end]))
    return sorted(names)
