"""Test-only: log every import of TensorFlow, Keras or a worker in a quick-lane run.

``tests/conftest.py`` puts this folder first on ``PYTHONPATH`` when a run deselects
the tests marked ``tf``, so every Python process those tests start (a worker, the
CLI, a script run with ``sys.executable``) loads this module at start-up and
notes in the log what it imported. The test that started it then fails: the quick
lane never needs TensorFlow. Nothing is blocked, so what runs is what would run.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

LOG_ENV = "TFSTUDIO_TEST_TF_IMPORT_LOG"
# A worker process is TensorFlow's home, even before it imports it.
WATCHED = frozenset({"tensorflow", "keras", "tfstudio.worker"})


class ImportWatch:
    """A meta-path finder that logs the first import of each watched module and finds nothing."""

    def __init__(self, log_path: str, watched: frozenset[str] = WATCHED) -> None:
        self.log_path = log_path
        self.watched = watched
        self.seen: set[str] = set()

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        """Note ``name`` if it is watched; the real finders then import it as usual."""
        if name in self.watched and name not in self.seen:
            self.seen.add(name)
            command = " ".join(getattr(sys, "orig_argv", sys.argv))
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()}\t{name}\t{_test_line()}\t{command[:300]}\n")


def _test_line() -> str:
    """The innermost ``file:line`` of a test module on the stack (where the import came from)."""
    frame = sys._getframe(2)  # above this function and find_spec
    while frame is not None:
        filename = frame.f_code.co_filename
        if os.path.basename(filename).startswith("test_") or f"{os.sep}tests{os.sep}" in filename:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def install(log_path: str, watched: frozenset[str] = WATCHED) -> ImportWatch:
    """Put an ImportWatch first on ``sys.meta_path`` and return it."""
    watch = ImportWatch(log_path, watched)
    sys.meta_path.insert(0, watch)
    return watch


def _run_the_sitecustomize_this_one_shadows() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if __name__ == "sitecustomize":
    if os.environ.get(LOG_ENV):
        install(os.environ[LOG_ENV])
    _run_the_sitecustomize_this_one_shadows()
