"""Rule 9: a subclassed ``keras.Model`` saved without ``get_config`` / registration."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfstudio.core.advisor.analysis import Script
from tfstudio.core.advisor.base import Rule


def _registered(script: Script, cls: ast.ClassDef) -> bool:
    for dec in cls.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if "register_keras_serializable" in (script.qualname(target) or ""):
            return True
    return False


def _has(cls: ast.ClassDef, name: str) -> bool:
    return any(isinstance(i, ast.FunctionDef) and i.name == name for i in cls.body)


def _custom_objects(script: Script) -> bool:
    for node in script.nodes:
        if isinstance(node, ast.keyword) and node.arg == "custom_objects":
            return True
        if isinstance(node, ast.Call) and "custom_object_scope" in (
            script.qualname(node.func) or ""
        ):
            return True
    return False


def check(script: Script) -> Iterator[tuple[int, str]]:
    """``m.save(...)`` where ``m = MyModel(...)`` and MyModel is an unregistered subclass."""
    if _custom_objects(script):
        return
    for node in script.nodes:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "save"
            and isinstance(node.func.value, ast.Name)
        ):
            continue
        value = script.single_value(node.func.value.id)
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            continue
        cls = script.classes.get(value.func.id)
        if cls is None or not script.is_keras_model_class(cls) or _registered(script, cls):
            continue
        missing = "" if _has(cls, "get_config") else " and has no get_config()"
        yield (
            node.lineno,
            (
                f"{cls.name} (line {cls.lineno}) is a subclassed Model that is not registered"
                f'{missing}: keras.models.load_model() on this file fails with "Could not locate '
                f"class '{cls.name}'\""
            ),
        )


RULE = Rule(
    name="subclass-save",
    title="Subclassed model saved in a form that will not load",
    explanation=(
        "Keras stores a subclassed model by class name and constructor config; loading needs "
        "the class registered and a get_config() that rebuilds it."
    ),
    fix='@keras.saving.register_keras_serializable(package="my_models") on the class, and '
    "def get_config(self): return {**super().get_config(), 'units': self.units}; "
    "or save_weights() and rebuild the model in code",
    check=check,
)
