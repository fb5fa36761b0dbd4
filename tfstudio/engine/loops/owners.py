"""Whose variables a custom loop trains: the name a loop is shown under.

A loop is named after the model or module that owns the variables it updates
(its name, or the script's name for it when Keras gave it a generic one such as
``sequential_3``), found among the bindings of the frames that run the step.
A Keras model may hold raw ``tf.Variable`` attributes that its
``trainable_variables`` does not list (TensorFlow's "basic training loops"
guide does this): those attributes count as its variables too. With no owner
the loop is named after the script function that runs the step, and never after
a variable's class (``tf.Variable``'s default name is ``"Variable"``).

Runs once per series (when a loop's step is first seen), never per step.
"""

from __future__ import annotations

import re
import sys
from types import FrameType, ModuleType
from typing import Any, NamedTuple

_AUTO_NAME = re.compile(r"^(sequential|functional|model|module)(_\d+)?$")
_DEFAULT_VARIABLE = re.compile(r"^Variable(_\d+)?$")
_LIBRARIES = ("tensorflow", "keras", "tfstudio", "tf_keras")
MAX_FRAMES = 40  # how far up the stack bindings are looked for


class Owner(NamedTuple):
    """What discovery found for the variables of one series.

    Args:
        name: what the loop (or this series of a loop) is called.
        obj: the model or module, or None.
        holds_all: ``obj``'s ``trainable_variables`` holds every variable (so a
            checkpoint of ``obj`` saves them); False for raw attributes.
        labels: a readable name per variable id (the variable's own name, or the
            attribute or binding that holds it where its name is TensorFlow's default).
    """

    name: str
    obj: Any
    holds_all: bool
    labels: dict[int, str]


def discover(variables: list[Any], watched: dict[int, tuple[str, Any]]) -> Owner:
    """Name and owner of ``variables``, from ``monitor.watch`` or the caller's frames."""
    ids = {id(v) for v in variables}
    for v in variables:
        if id(v) in watched:
            name, obj = watched[id(v)]
            owned = trainable_ids(obj)
            labels = _labels(variables, _attribute_names(obj, ids), {})
            return Owner(name, obj, ids <= owned, labels)
    best: tuple[int, str, Any, bool] | None = None
    bound: dict[int, str] = {}  # variable id -> a binding that holds it (bare variables)
    function = ""  # the innermost script function running the step
    frame: FrameType | None = sys._getframe(1)
    seen: set[int] = set()
    depth = 0
    while frame is not None and depth < MAX_FRAMES:
        script = _script_function(frame)
        if not function:
            function = script
        in_script = bool(script) or frame.f_globals.get("__name__") == "__main__"
        for scope in (frame.f_locals, frame.f_globals):
            for binding, obj in list(scope.items()):
                if id(obj) in ids:
                    if in_script:  # the script's own name for a bare variable
                        bound.setdefault(id(obj), binding)
                    continue
                if id(obj) in seen or isinstance(obj, type | ModuleType):
                    continue
                seen.add(id(obj))
                owned = variables_of(obj)
                if owned is None:
                    continue
                owned_ids = {id(v) for v in owned}
                if not ids <= owned_ids:
                    continue
                if best is None or len(owned_ids) < best[0]:
                    name = _name_of(obj, binding)
                    best = (len(owned_ids), name, obj, ids <= trainable_ids(obj))
        frame = frame.f_back
        depth += 1
    if best is not None:
        _, name, obj, holds_all = best
        return Owner(name, obj, holds_all, _labels(variables, _attribute_names(obj, ids), bound))
    labels = _labels(variables, {}, bound)
    return Owner(function or _common_prefix(variables) or "custom loop", None, False, labels)


def variables_of(obj: Any) -> list[Any] | None:
    """The variables a model or module trains: its ``trainable_variables`` and raw attributes."""
    try:
        if not (hasattr(obj, "trainable_variables") and hasattr(obj, "name")):
            return None
        owned = obj.trainable_variables
        if not isinstance(owned, list | tuple):
            return None  # e.g. autograph's Undefined, whose every attribute is itself
        out = list(owned)
        known = {id(v) for v in out}
        for value in _attribute_values(obj):
            if id(value) not in known and is_variable(value):
                known.add(id(value))
                out.append(value)
        return out or None
    except Exception:  # noqa: BLE001 - properties of arbitrary objects
        return None


def trainable_ids(obj: Any) -> set[int]:
    """Ids of ``obj.trainable_variables`` (what a checkpoint of ``obj`` saves)."""
    try:
        return {id(v) for v in obj.trainable_variables}
    except Exception:  # noqa: BLE001
        return set()


def is_variable(x: Any) -> bool:
    """Whether ``x`` is a trainable variable (a tf.Variable or a Keras Variable)."""
    return hasattr(x, "assign_sub") and hasattr(x, "trainable")


def variable_label(variable: Any) -> str:
    """A variable's short name (``dense/kernel:0`` -> ``kernel``)."""
    return str(getattr(variable, "name", "") or "").split(":")[0].split("/")[-1]


def size(variable: Any) -> int:
    """How many numbers a variable holds."""
    n = 1
    for d in tuple(variable.shape):
        n *= int(d or 1)
    return n


def _name_of(obj: Any, binding: str) -> str:
    name = str(getattr(obj, "name", "") or "")
    if not name or _AUTO_NAME.match(name):
        # Keras's generic names say nothing; the script's own name for it does
        return binding if not binding.startswith("_") else (name or binding)
    return name


def _attribute_values(obj: Any) -> list[Any]:
    try:
        values = list(vars(obj).values())
    except TypeError:
        return []
    out: list[Any] = []
    for value in values:
        if isinstance(value, list | tuple):
            out.extend(value)
        else:
            out.append(value)
    return out


def _attribute_names(obj: Any, ids: set[int]) -> dict[int, str]:
    try:
        items = list(vars(obj).items())
    except TypeError:
        return {}
    return {id(value): name for name, value in items if id(value) in ids}


def _labels(
    variables: list[Any], attributes: dict[int, str], bound: dict[int, str]
) -> dict[int, str]:
    out: dict[int, str] = {}
    for v in variables:
        own = variable_label(v)
        if not own or _DEFAULT_VARIABLE.match(own):
            own = attributes.get(id(v)) or bound.get(id(v)) or own or "variable"
        out[id(v)] = own
    return out


def _script_function(frame: FrameType) -> str:
    """The name of the script's function running in ``frame`` ("" for library code)."""
    code = frame.f_code
    name = code.co_name
    if name.startswith("tf__"):  # autograph's converted copy of the user's function
        return name[4:]
    if name.startswith("<") or frame.f_globals.get("__name__") != "__main__":
        return ""
    return name


def _common_prefix(variables: list[Any]) -> str:
    first = variables[0]
    path = str(getattr(first, "path", "") or getattr(first, "name", "") or "")
    prefix = path.split("/")[0].split(":")[0]
    return "" if _DEFAULT_VARIABLE.match(prefix) else prefix
