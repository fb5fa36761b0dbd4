"""The window process never collects garbage off the GUI thread, and reports a stall with stacks."""

from __future__ import annotations

import gc
import re
import threading
import time
import weakref

import pytest
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication

from tfstudio.ui import guards


@pytest.fixture
def collector(qapp):
    was = gc.isenabled()
    gc.enable()  # as in a fresh process: automatic collection on
    gc.collect()
    c = guards.GuiThreadCollector(qapp)
    yield c
    c.uninstall()
    c.deleteLater()
    if not was:
        gc.disable()


class _Holder:
    """A reference cycle that owns a Qt object: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self
        self.widget = QObject()


def test_cyclic_garbage_with_qt_objects_is_collected_on_the_gui_thread_only(qtbot, collector):
    freed_on: list[str] = []
    for _ in range(20):
        holder = _Holder()
        weakref.finalize(holder, lambda: freed_on.append(threading.current_thread().name))
        del holder  # garbage now, held by its own cycle

    kept: list[list[int]] = []

    def allocate() -> None:  # a library thread that allocates, as the run's reader thread does
        for i in range(5_000):  # past the collector's threshold: it would collect here
            kept.append([i])

    other = threading.Thread(target=allocate, name="reader")
    other.start()
    other.join()
    assert freed_on == []  # the allocating thread collected nothing
    qtbot.waitUntil(lambda: len(freed_on) == 20, timeout=3000)
    assert set(freed_on) == {threading.main_thread().name}


def test_memory_stays_bounded_without_automatic_collection(qtbot, collector):
    freed = [0]

    def count() -> None:
        freed[0] += 1

    for _ in range(5):
        for _ in range(2000):
            holder = _Holder()
            weakref.finalize(holder, count)
            del holder
        qtbot.wait(2 * guards.COLLECT_EVERY_MS)
    qtbot.waitUntil(lambda: freed[0] >= 9000, timeout=3000)  # the timer keeps up with cycles


def test_a_stalled_gui_thread_writes_every_threads_stack_to_stderr_and_a_file(qtbot, tmp_path):
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "a", encoding="utf-8") as err:  # appends, as a terminal does
        dog = guards.HangWatchdog(
            QApplication.instance(), after_s=1.0, folder=tmp_path / "state", stderr=err
        )
        try:
            qtbot.wait(200)
            time.sleep(3.0)  # the GUI thread does not answer (as in a deadlock)
            qtbot.waitUntil(lambda: "responds again" in err_path.read_text(), timeout=5000)
        finally:
            dog.close()
    text = err_path.read_text()
    line = re.search(r"tfstudio: the window has not responded for (\d+) s; stacks of all threads "
                     r"above and in (\S+)", text)  # fmt: skip
    assert line, text
    assert int(line.group(1)) >= 1
    stacks = (tmp_path / "state").glob("window-stall-*.txt")
    (stall_file,) = list(stacks)
    assert str(stall_file) == line.group(2)
    dumped = stall_file.read_text()
    # the GUI thread's stack names this test, where it stood still
    assert "test_a_stalled_gui_thread" in dumped
    assert "test_a_stalled_gui_thread" in text.split("tfstudio: the window")[0]


def test_a_healthy_window_leaves_no_stall_file_and_says_nothing(qtbot, tmp_path):
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "a", encoding="utf-8") as err:  # appends, as a terminal does
        dog = guards.HangWatchdog(
            QApplication.instance(), after_s=3.0, folder=tmp_path / "state", stderr=err
        )
        qtbot.wait(4500)  # longer than after_s: the beats (one a second) keep it quiet
        dog.close()
    assert err_path.read_text() == ""
    assert list((tmp_path / "state").glob("*")) == []
