"""Rule 7: one shuffled (or random) dataset mapped into inputs and labels separately, zipped."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script, method
from tfstudio.core.advisor.base import Rule
from tfstudio.core.advisor.rules.shuffle_split import reshuffles


def _uses_random(script: Script, call: ast.Call) -> bool:
    fn = script.function_of(call.args[0]) if call.args else None
    if fn is None:
        return False
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = script.qualname(node.func) or ""
            if name.startswith(("tensorflow.random.", "random.", "numpy.random.")):
                return True
            if name.startswith("tensorflow.image.random_"):
                return True
    return False


def _zipped(script: Script, call: ast.Call) -> list[ast.expr] | None:
    """The datasets a zip pairs: ``Dataset.zip((a, b))``, or built-in ``zip(a, b)`` of datasets."""
    if (script.qualname(call.func) or "").endswith("Dataset.zip"):
        parts = list(call.args)
        if len(parts) == 1 and isinstance(parts[0], (ast.Tuple, ast.List)):
            parts = list(parts[0].elts)
        return parts
    if (
        isinstance(call.func, ast.Name)
        and call.func.id == "zip"
        and not script.is_bound(call.func)
        and len(call.args) >= 2
        and all(script.is_dataset(a) for a in call.args)
    ):  # the built-in: iterates each dataset on its own, in lockstep
        return list(call.args)
    return None


def check(script: Script) -> Iterator[tuple[int, str]]:
    """Zipped datasets (``Dataset.zip`` or built-in ``zip``) that are maps of one shuffled or
    random source."""
    for node in script.nodes:
        if not isinstance(node, ast.Call):
            continue
        parts = _zipped(script, node)
        if parts is None:
            continue
        chains = [script.chain(p) for p in parts]
        if len(chains) < 2 or not all(chains):
            continue
        first = chains[0]
        common = 0
        while all(len(c) > common and c[common] is first[common] for c in chains):
            common += 1
        if common == 0 or not all(len(c) > common and method(c[common]) == "map" for c in chains):
            continue
        shared = first[:common]
        why = ""
        if any(method(c) == "shuffle" and reshuffles(c) for c in shared):
            why = "the shared source is shuffled, and each branch iterates it in its own order"
        elif any(
            _uses_random(script, c) for ch in chains for c in ch[common:] if method(c) == "map"
        ):
            why = "a map draws random numbers in one branch, independently of the other"
        if why:
            yield (
                node.lineno,
                (
                    f"inputs and labels are mapped from one dataset separately and zipped: {why}, "
                    "so inputs no longer match their labels"
                ),
            )


RULE = Rule(
    name="zip-mismatch",
    title="Inputs and labels zipped from separately mapped branches",
    explanation=(
        "Two pipelines built from one shuffled/random dataset run independently: zipping "
        "them pairs an input with another example's label."
    ),
    fix="one map that returns both: ds.map(lambda e: (features(e), label(e))); shuffle "
    "after pairing",
    check=check,
)
