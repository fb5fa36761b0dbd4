"""patch_on_import: patch a module now, or right after the script imports it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tfstudio.engine.instrument import patch_on_import


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = "tfstudio_hook_probe_module"
    (tmp_path / f"{name}.py").write_text("READY = True\nvalue = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_patches_after_the_import_and_removes_itself(fresh_module: str) -> None:
    seen: list[str] = []

    def patch(module: ModuleType) -> None:
        module.value = 2

    hook = patch_on_import(
        fresh_module, "READY", patch, print, "x", after=lambda: seen.append("after")
    )
    assert hook is not None and hook in sys.meta_path
    module = __import__(fresh_module)
    assert module.value == 2 and seen == ["after"]
    assert hook not in sys.meta_path


def test_a_failing_patch_is_reported_and_the_import_still_works(fresh_module: str) -> None:
    reports: list[tuple[str, BaseException]] = []

    def patch(module: ModuleType) -> None:
        raise RuntimeError("boom")

    patch_on_import(fresh_module, "READY", patch, lambda w, e: reports.append((w, e)), "patching")
    module = __import__(fresh_module)
    assert module.value == 1
    assert [(w, str(e)) for w, e in reports] == [("patching", "boom")]


def test_an_imported_module_is_patched_now(fresh_module: str) -> None:
    module = __import__(fresh_module)
    hook = patch_on_import(fresh_module, "READY", lambda m: setattr(m, "value", 3), print, "x")
    assert hook is None and module.value == 3
