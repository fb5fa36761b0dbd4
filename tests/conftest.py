"""Shared test set-up: offscreen Qt, quiet TensorFlow, helpers to run scripts."""

from __future__ import annotations

import gc
import os
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")


@pytest.fixture(autouse=True, scope="session")
def _runs_go_to_a_temp_folder(tmp_path_factory):
    """Runs record by default; keep test runs out of the repository (subprocesses inherit it)."""
    os.environ["TFSTUDIO_LOGDIR"] = str(tmp_path_factory.mktemp("tfstudio-runs"))


@pytest.fixture
def write_script(tmp_path: Path):
    """Write a dedented script into tmp_path and return its path."""

    def write(source: str, name: str = "train.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return path

    return write


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.01):
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")


def _children() -> set[int]:
    return {c.pid for c in psutil.Process().children(recursive=True) if _alive(c)}


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _our_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("tfstudio-worker")}


@pytest.fixture(autouse=True)
def _qt_garbage_is_collected_on_the_main_thread(request):
    """After a Qt test, collect its garbage here, on the main thread.

    Otherwise a later in-process training thread's garbage collection may destroy
    leftover PySide objects off the main thread, and that deadlocks against the main
    thread's own deferred Qt deletions (seen as a hung training thread inside TF, with
    ``QObject::~QObject`` waiting for the GIL). The window process never trains, and
    the worker never imports Qt, so this only concerns tests that mix both in one process.
    """
    yield
    if "qtbot" in request.fixturenames or "qapp" in request.fixturenames:
        gc.collect()


@pytest.fixture(autouse=True)
def no_leaked_workers():
    """A test that leaves a child process or a worker-reading thread behind fails here."""
    before = _children()
    threads_before = _our_threads()
    yield
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = _children() - before
        threads = _our_threads() - threads_before
        if not left and not threads:
            return
        time.sleep(0.05)
    for pid in left:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    pytest.fail(f"the test left child processes {sorted(left)} / threads {sorted(threads)}")


@pytest.fixture
def runs_panel(qtbot):
    """A shown RunsPanel (with nothing listed), stopped and its windows closed afterwards."""
    from tfstudio.ui.panels.runs import RunsPanel

    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.resize(1100, 500)
    panel.show()
    yield panel
    panel.timer.stop()
    for window in panel.inspectors:
        window.close()
