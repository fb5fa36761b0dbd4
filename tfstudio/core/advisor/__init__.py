"""The advisor: names the TensorFlow pitfalls a script falls into, with file:line and the fix.

Static rules read the script's ``ast`` (no TensorFlow, no Qt), so the window can run
them when a script is opened and ``tfstudio check`` in a terminal. Live rules
(retracing, divergence, dead units, a stuck loss, graph-mode errors) fire in the
worker: ``tfstudio/engine/advisor_live.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tfstudio.core.advisor.analysis import Script
from tfstudio.core.advisor.base import Finding, Rule
from tfstudio.core.advisor.live import LIVE_RULES
from tfstudio.core.advisor.rules import (
    batch_order,
    logits,
    py_function_map,
    python_state,
    shuffle_split,
    subclass_save,
    tensor_in_python,
    trace_side_effects,
    zip_mapped,
)

STATIC_RULES: tuple[Rule, ...] = (
    trace_side_effects.RULE,
    tensor_in_python.RULE,
    python_state.RULE,
    shuffle_split.RULE,
    batch_order.RULE,
    zip_mapped.RULE,
    py_function_map.RULE,
    subclass_save.RULE,
    logits.RULE,
)
RULES: tuple[Rule, ...] = STATIC_RULES + LIVE_RULES

__all__ = [
    "RULES",
    "STATIC_RULES",
    "Finding",
    "Rule",
    "check_source",
    "check_text",
    "syntax_error",
]


def syntax_error(source: str, path: str = "<script>") -> str | None:
    """``path:line:col: SyntaxError: message`` (and the line, marked) when ``source``
    does not parse; None when it does.

    The same check Python makes before running a script (``compile``), so a script
    reported here would fail at once when run, and one that passes would not.
    """
    try:
        compile(source, path, "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else path
        if exc.lineno and exc.offset:
            where += f":{exc.offset}"
        text = f"{where}: {type(exc).__name__}: {exc.msg}"
        line = (exc.text or "").rstrip("\r\n")
        if line.strip():
            indent = len(line) - len(line.lstrip())
            text += f"\n    {line.strip()}"
            if exc.offset and exc.offset > indent:
                text += "\n    " + " " * (exc.offset - 1 - indent) + "^"
        return text
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return f"{path}: SyntaxError: {exc}"
    return None


def check_text(source: str, path: str = "<script>") -> list[Finding]:
    """Run the static rules on a script's text; sorted by line, one finding per rule and line.

    A script that does not parse yields nothing (running it will report the syntax error).
    """
    try:
        script = Script.parse(source, path)
    except (SyntaxError, ValueError):
        return []
    found: dict[tuple[str, int], Finding] = {}
    for rule in STATIC_RULES:
        if rule.check is None:
            continue
        try:
            hits = list(rule.check(script))
        except RecursionError:  # a pathological script: this rule stays silent
            continue
        for line, message in hits:
            found.setdefault((rule.name, line), rule.advice(message, path, line))
    return sorted(found.values(), key=lambda f: (f.line, f.rule))


def check_source(path: str | Path) -> list[Finding]:
    """Run the static rules on the script at ``path`` (raises ``OSError`` if unreadable)."""
    p = Path(path)
    source = p.read_text(encoding="utf-8", errors="replace")
    return check_text(source, str(p))
