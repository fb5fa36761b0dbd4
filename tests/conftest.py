"""Shared test set-up: offscreen Qt, quiet TensorFlow, helpers to run scripts."""

from __future__ import annotations

import ast
import gc
import itertools
import os
import re
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.lane_guard import sitecustomize as lane_guard

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")


# -- The quick lane: `pytest -m "not tf"` never imports TensorFlow ----------------------
TF_MODULES = ("tensorflow", "keras")
_lane: dict[str, object] = {}  # set by pytest_configure when the run leaves out the tf tests


def excludes_tf(markexpr: str) -> bool:
    """Whether ``-m markexpr`` deselects every test marked ``tf``, whatever other marks it has."""
    if not markexpr.strip():
        return False
    from _pytest.mark.expression import Expression

    expr = Expression.compile(markexpr)
    others = sorted(set(re.findall(r"[A-Za-z_]\w*", markexpr)) - {"and", "or", "not", "tf"})
    if len(others) > 8:  # too many to try every combination: leave the run unwatched
        return False
    for present in itertools.product((False, True), repeat=len(others)):
        marks = {"tf", *(name for name, on in zip(others, present, strict=True) if on)}
        if expr.evaluate(_has_mark(marks)):
            return False
    return True


def _has_mark(marks: set[str]):
    return lambda name, **kwargs: name in marks


def marked_tf_as_a_whole(path: Path) -> bool:
    """Whether a test file's module-level ``pytestmark`` holds ``pytest.mark.tf`` (parsed only)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            return any(
                isinstance(n, ast.Attribute) and n.attr == "tf" for n in ast.walk(node.value)
            )
    return False


def pytest_configure(config):
    """In a run without the tf tests, watch this process and every Python process it starts."""
    if not excludes_tf(config.option.markexpr):
        return
    handle, name = tempfile.mkstemp(prefix="tfstudio-quick-lane-", suffix=".log")
    os.close(handle)
    log = Path(name)
    folder = os.path.dirname(lane_guard.__file__)
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = folder + (os.pathsep + path if path else "")
    os.environ[lane_guard.LOG_ENV] = str(log)
    already = [m for m in TF_MODULES if m in sys.modules]
    lane_guard.install(str(log), frozenset(TF_MODULES))
    _lane.update(log=log, already=already)


def pytest_unconfigure(config):
    """The quick lane's import log goes with the run."""
    if _lane:
        _lane["log"].unlink(missing_ok=True)


def pytest_ignore_collect(collection_path: Path, config):
    """A run without the tf tests does not even import the files marked tf as a whole."""
    if (
        _lane
        and collection_path.suffix == ".py"
        and collection_path.name.startswith("test_")
        and marked_tf_as_a_whole(collection_path)
    ):
        return True
    return None


def _imports_logged_since(offset: int) -> list[str]:
    with open(_lane["log"], encoding="utf-8") as log:
        log.seek(offset)
        return [line.rstrip("\n") for line in log]


@pytest.fixture(autouse=True)
def _quick_lane_imports_no_tensorflow(request):
    """In the quick lane, a test that imports TensorFlow or starts a worker fails: mark it tf."""
    if not _lane or request.node.get_closest_marker("tf"):
        yield
        return
    offset = _lane["log"].stat().st_size
    yield
    by_process: dict[str, tuple[str, list[str]]] = {}
    for line in _imports_logged_since(offset):
        pid, module, origin, command = line.split("\t", 3)
        here = int(pid) == os.getpid()
        who = f"this test ({origin})" if here else f"a process it started ({command})"
        by_process.setdefault(pid, (who, []))[1].append(module)
    if by_process:
        found = "; ".join(f"{who} imported {', '.join(m)}" for who, m in by_process.values())
        pytest.fail(
            f"the quick lane (-m 'not tf') never needs TensorFlow, but {found}: "
            "mark the test (or its file) with pytest.mark.tf"
        )


def pytest_sessionfinish(session, exitstatus):
    """The quick lane fails if anything (a test file's own imports included) loaded TensorFlow."""
    if not _lane:
        return
    loaded = [m for m in TF_MODULES if m in sys.modules and m not in _lane["already"]]
    if loaded:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        ours = [line.split("\t") for line in _imports_logged_since(0)]
        origins = sorted({o for pid, _, o, _ in ours if int(pid) == os.getpid() and o})
        message = (
            f"the quick lane imported {', '.join(loaded)} in the test process"
            + (f" (from {', '.join(origins)})" if origins else "")
            + "; a test file that imports TensorFlow/Keras at its top needs "
            "pytestmark = pytest.mark.tf"
        )
        if reporter is not None:
            reporter.write_sep("=", "quick lane", red=True)
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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

    The widgets pytest-qt closed get their deferred deletion now too: left pending
    (no event loop runs between tests), every window of the session stayed alive, and
    each collection walked them all (a quarter of the quick lane's time went there).

    It happens when the next test is set up: at this fixture's teardown, pytest still
    holds the test's fixture values (its window), so they were not garbage yet, and a
    later test's training thread collected them (seen once in CI: it destroyed a
    QObject while the main thread destroyed a QMenu, each waiting for the other).
    """
    if _qt_garbage["pending"]:
        from PySide6.QtCore import QCoreApplication, QEvent

        _qt_garbage["pending"] = False
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
    yield
    if "qtbot" in request.fixturenames or "qapp" in request.fixturenames:
        _qt_garbage["pending"] = True


_qt_garbage = {"pending": False}  # a Qt test ran: collect before the next one is set up


def pytest_collection_finish(session):
    """Set aside what is alive once the tests are collected (modules, test items).

    Each collection after a Qt test then walks only what the tests made since.
    """
    gc.collect()
    gc.freeze()


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
    for window in panel.scatters:
        window.close()
