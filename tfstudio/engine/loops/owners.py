"""Whose variables a custom loop trains: the name a loop is shown under (once per series).

A loop is named after the model or module that owns the variables it updates (its name,
or the script's name for it where Keras gave a generic one such as ``sequential_3``), found
among the bindings of the frames that run the step; a Keras model's raw ``tf.Variable``
attributes count as its variables (the "basic training loops" guide). With no owner, after
the script function that runs the step, or at top level the script's names for its
variables; never after ``tf.Variable``'s default name nor tfstudio's own code (the worker's
module is ``__main__`` too).
"""

from __future__ import annotations

import math
import os
import re
import sys
import sysconfig
from types import FrameType, ModuleType
from typing import Any, NamedTuple

from tfstudio.engine.script import execute

_AUTO_NAME = re.compile(r"^(sequential|functional|model|module)(_\d+)?$")
_DEFAULT_VARIABLE = re.compile(r"^Variable(_\d+)?$")
MAX_FRAMES = 80  # how far up the stack bindings are looked for (a trace's stack is deep)
MAX_ATTRIBUTES = 200  # an object's attributes looked at for an owner (``self.model``)
MAX_NAMES = 4  # a top-level loop of at most this many bare variables is named after them


def _library_roots() -> tuple[str, ...]:
    roots = {os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.abspath(path))
    return tuple(os.path.join(r, "") for r in roots)


_LIBRARY_ROOTS = _library_roots()  # tfstudio's package, the standard library, site-packages
_user_files: dict[str, bool] = {}
_RUNNER = execute.__code__  # frames older than the script's runner are never the user's


def is_user_file(filename: str) -> bool:
    """Whether code from ``filename`` is the user's: not tfstudio's, a library's or generated
    (``<string>``). Autograph's copies of user functions are told by their ``tf__`` names."""
    known = _user_files.get(filename)
    if known is None:
        known = not (
            filename.startswith("<")
            or "site-packages" in filename
            or "dist-packages" in filename
            or os.path.abspath(filename).startswith(_LIBRARY_ROOTS)
        )
        _user_files[filename] = known
    return known


def user_site(depth: int = 2) -> tuple[Any, ...]:
    """The innermost user frame on the caller's stack, (its code, its line), or (): where
    the script runs an eager step (two loops over one model and optimizer are two loops)."""
    frame: FrameType | None = sys._getframe(depth)
    while frame is not None and frame.f_code is not _RUNNER:
        code = frame.f_code
        if is_user_file(code.co_filename) and not code.co_name.startswith("tf__"):
            return code, frame.f_lineno
        frame = frame.f_back
    return ()


class Owner(NamedTuple):
    """What discovery found for the variables of one series."""

    name: str  # what the series (its loop) is called
    obj: Any  # the model or module, or None
    holds_all: bool  # its trainable_variables hold every variable (its checkpoint saves them)
    labels: dict[int, str]  # variable id -> a readable name (its attribute where TF named it)


def discover(variables: list[Any], watched: dict[int, tuple[str, Any]]) -> Owner:
    """Name and owner of ``variables``, from ``monitor.watch`` or the caller's frames."""
    ids = {id(v) for v in variables}
    for v in variables:
        if id(v) in watched:
            name, obj = watched[id(v)]
            owned = trainable_ids(obj)
            return Owner(name, obj, ids <= owned, _labels(variables, obj, {}))
    best: tuple[int, str, Any, bool] | None = None  # (size, binding, owner, holds all)
    named: dict[int, str] = {}  # object id -> the script's innermost name for it (not self)
    function = ""  # the innermost script function running the step
    script_file = ""  # the file of the innermost user frame
    frame: FrameType | None = sys._getframe(1)
    seen: set[int] = set()
    inside: list[tuple[str, Any]] = []  # objects of user frames, to look into if need be
    depth = 0

    def consider(binding: str, obj: Any) -> bool:  # owns every variable (the best so far?)
        nonlocal best
        owned = variables_of(obj)
        if owned is None:
            return False
        owned_ids = {id(v) for v in owned}
        if not ids <= owned_ids:
            return False
        if best is None or len(owned_ids) < best[0]:
            best = (len(owned_ids), binding, obj, ids <= trainable_ids(obj))
        return True

    while frame is not None and depth < MAX_FRAMES and frame.f_code is not _RUNNER:
        script = _script_function(frame)
        if not function:
            function = script
        code = frame.f_code
        in_script = code.co_name.startswith("tf__") or is_user_file(code.co_filename)
        if in_script and not script_file:
            script_file = frame.f_code.co_filename
        for scope in (frame.f_locals, frame.f_globals):
            for binding, obj in list(scope.items()):
                if in_script and binding != "self":  # (Keras's train_step: its model)
                    named.setdefault(id(obj), binding)
                if id(obj) in ids or id(obj) in seen or isinstance(obj, type | ModuleType):
                    continue
                seen.add(id(obj))
                if not consider(binding, obj) and in_script:
                    inside.append((binding, obj))
        frame = frame.f_back
        depth += 1
    if best is None:  # one level in: a trainer's ``self.model``
        for _, holder in inside:
            for binding, obj in _attribute_items(holder):
                if id(obj) not in seen and not isinstance(obj, type | ModuleType):
                    seen.add(id(obj))
                    consider(binding, obj)
    if best is not None:
        _, binding, obj, holds_all = best
        name = _name_of(obj, named.get(id(obj), binding))
        return Owner(name, obj, holds_all, _labels(variables, obj, named))
    labels = _labels(variables, None, named)
    name = function or _common_prefix(variables) or _bound_names(variables, named)
    if not name and script_file:
        name = os.path.splitext(os.path.basename(script_file))[0]
    return Owner(name or "custom loop", None, False, labels)


def variables_of(obj: Any) -> list[Any] | None:
    """A model's or module's ``trainable_variables`` and raw variable attributes (else None)."""
    try:
        if not (hasattr(obj, "trainable_variables") and hasattr(obj, "name")):
            return None
        owned = obj.trainable_variables
        if not isinstance(owned, list | tuple):
            return None  # e.g. autograph's Undefined, whose every attribute is itself
        out = list(owned)
        known = {id(v) for v in out}
        for value in list(getattr(obj, "__dict__", {}).values()):
            for v in value if isinstance(value, list | tuple) else (value,):
                if id(v) not in known and is_variable(v):
                    known.add(id(v))
                    out.append(v)
        return out or None
    except Exception:  # noqa: BLE001 - properties of arbitrary objects
        return None


def trainable_ids(obj: Any) -> set[int]:
    try:
        return {id(v) for v in obj.trainable_variables}
    except Exception:  # noqa: BLE001
        return set()


def is_variable(x: Any) -> bool:
    """Whether ``x`` is a tf.Variable or a Keras Variable."""
    return hasattr(x, "assign_sub") and hasattr(x, "trainable")


def variable_label(variable: Any) -> str:
    """A variable's short name (``dense/kernel:0`` -> ``kernel``)."""
    return str(getattr(variable, "name", "") or "").split(":")[0].split("/")[-1]


def size(variable: Any) -> int:
    return math.prod(int(d or 1) for d in tuple(variable.shape))


def _name_of(obj: Any, binding: str) -> str:
    name = str(getattr(obj, "name", "") or "")
    if not name or _AUTO_NAME.match(name):
        # Keras's generic names say nothing; the script's own name for it does
        return binding if not binding.startswith("_") else (name or binding)
    return name


def _attribute_items(obj: Any) -> list[tuple[str, Any]]:
    """An object's attributes (at most MAX_ATTRIBUTES), a list's items named by index."""
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, list | tuple):
        items = list(enumerate(obj))
    else:
        try:
            items = list(vars(obj).items())
        except TypeError:
            return []
    return [(str(k), v) for k, v in items[:MAX_ATTRIBUTES]]


def _bound_names(variables: list[Any], bound: dict[int, str]) -> str:
    """``"w, b"``: a few bare variables the script bound to names of its own (else "")."""
    names = [bound.get(id(v), "") for v in variables]
    if len(names) > MAX_NAMES or not all(names):
        return ""
    return ", ".join(dict.fromkeys(names))


def _labels(variables: list[Any], obj: Any, bound: dict[int, str]) -> dict[int, str]:
    """A readable name per variable id: its own, else (TensorFlow's default ``Variable``) the
    attribute of ``obj`` or the script's binding that holds it."""
    attributes = {id(v): k for k, v in list(getattr(obj, "__dict__", {}).items())}
    out: dict[int, str] = {}
    for v in variables:
        own = variable_label(v)
        if not own or _DEFAULT_VARIABLE.match(own):
            own = attributes.get(id(v)) or bound.get(id(v)) or own or "variable"
        out[id(v)] = own
    return out


def _script_function(frame: FrameType) -> str:
    """The user's function running in ``frame`` ("" for library code and top level)."""
    code = frame.f_code
    name = code.co_name
    if name.startswith("tf__"):  # autograph's converted copy of the user's function
        return name[4:]
    if name.startswith("<") or not is_user_file(code.co_filename):
        return ""
    return name


def _common_prefix(variables: list[Any]) -> str:
    first = variables[0]
    path = str(getattr(first, "path", "") or getattr(first, "name", "") or "")
    prefix = path.split("/")[0].split(":")[0]
    return "" if _DEFAULT_VARIABLE.match(prefix) else prefix
