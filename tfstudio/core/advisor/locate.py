"""Find lines in a user's script for live advice (pure ``ast``; None when not found)."""

from __future__ import annotations

import ast
from functools import lru_cache


@lru_cache(maxsize=8)
def _tree(path: str) -> ast.Module | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def def_line(path: str, name: str) -> int:
    """Line of ``def name`` (a function or method) in the script; 0 when not found."""
    tree = _tree(path)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node.lineno
    return 0


def call_line(path: str, method: str) -> int:
    """Line of the first ``x.method(...)`` call in the script; 0 when not found."""
    tree = _tree(path)
    lines = [
        node.lineno
        for node in (ast.walk(tree) if tree else ())
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
    ]
    return min(lines, default=0)
