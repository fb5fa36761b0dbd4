"""Every run in a worker process of its own: crashes, signals, fresh runtimes, Stop that wins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import wait_for
from tfstudio.core.channel import Channel
from tfstudio.core.events import (
    ConsoleOutput,
    EngineStatus,
    RunDevices,
    RunEnded,
    RunStarted,
    StepEnded,
    step_rows,
)
from tfstudio.core.process import ProcessLauncher, describe_exit

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]


class Run:
    """A launcher and everything its runs reported."""

    def __init__(self, **kwargs) -> None:
        self.channel = Channel()
        kwargs.setdefault("keep_spare", False)
        self.launcher = ProcessLauncher(self.channel, **kwargs)
        self.events: list[object] = []

    def poll(self) -> list[object]:
        self.events.extend(self.channel.drain())
        return self.events

    def ended(self) -> list[RunEnded]:
        return [e for e in self.poll() if isinstance(e, RunEnded)]

    def run(self, script: Path, args=(), timeout: float = 120) -> RunEnded:
        count = len(self.ended())
        self.launcher.start(str(script), args)
        wait_for(lambda: len(self.ended()) > count, timeout=timeout)
        wait_for(lambda: not self.launcher.is_running(), timeout=10)
        return self.ended()[-1]

    def console(self) -> str:
        return "".join(e.text for e in self.poll() if isinstance(e, ConsoleOutput))

    def close(self) -> None:
        self.launcher.shutdown()


@pytest.fixture
def runs():
    made: list[Run] = []

    def make(**kwargs) -> Run:
        made.append(Run(**kwargs))
        return made[-1]

    yield make
    for run in made:
        run.close()


OK = "print('next run ok')\n"


def test_a_segfault_fails_the_run_with_the_reason_and_the_next_run_works(runs, write_script):
    crash = write_script(
        "import ctypes, sys\nprint('about to crash')\nctypes.string_at(0)\n", "crash.py"
    )
    run = runs()
    ended = run.run(crash)
    assert (ended.status, ended.exit_code) == ("failed", 128 + signal.SIGSEGV)
    assert "crashed: signal 11, segmentation fault (SIGSEGV)" in ended.message
    assert "about to crash" in run.console()  # the last output before the crash is kept
    assert run.run(write_script(OK, "ok.py")).status == "finished"
    assert "next run ok" in run.console()


def test_os_exit_and_an_outside_sigkill_end_the_run_as_failed(runs, write_script):
    run = runs()
    ended = run.run(write_script("import os\nprint('bye')\nos._exit(3)\n", "exits.py"))
    assert (ended.status, ended.exit_code) == ("failed", 3)
    assert "exited with os._exit(3)" in ended.message
    sleeper = write_script(
        "import time\nprint('waiting', flush=True)\nwhile True:\n    time.sleep(0.05)\n",
        "sleeps.py",
    )
    run.launcher.start(str(sleeper))
    wait_for(lambda: "waiting" in run.console(), timeout=120)
    os.kill(run.launcher.pid(), signal.SIGKILL)  # as the kernel's OOM killer would
    ended = wait_for(lambda: run.ended()[-1] if len(run.ended()) == 2 else None, timeout=30)
    assert (ended.status, ended.exit_code) == ("failed", 137)
    # The kernel's OOM counters did not move (or cannot be read here): no OOM claimed.
    assert "killed (SIGKILL" in ended.message and "out-of-memory killer (" not in ended.message
    assert run.run(write_script(OK, "ok.py")).status == "finished"


def test_a_script_that_handles_sigterm_runs(runs, write_script):
    path = write_script(
        """
        import signal, threading
        seen = []
        signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
        print("handler installed on", threading.current_thread().name)
        """
    )
    run = runs()
    assert run.run(path).status == "finished"
    assert "handler installed on MainThread" in run.console()


def test_each_run_gets_a_fresh_tensorflow_runtime(runs, write_script):
    first = write_script(
        """
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.run_functions_eagerly(True)
        print("first threads", tf.config.threading.get_intra_op_parallelism_threads())
        print("first sum", float(tf.reduce_sum(tf.ones(3))))
        """,
        "first.py",
    )
    second = write_script(
        """
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(2)

        @tf.function
        def mode():
            return tf.constant(tf.executing_eagerly())

        print("second threads", tf.config.threading.get_intra_op_parallelism_threads())
        print("second eager inside tf.function:", bool(mode()))
        """,
        "second.py",
    )
    run = runs()
    assert run.run(first).status == "finished"
    ended = run.run(second)
    text = run.console()
    assert ended.status == "finished", text[-2000:]
    assert "first threads 1" in text and "second threads 2" in text
    assert "second eager inside tf.function: False" in text  # graph mode again


def test_stop_escalates_until_a_script_that_ignores_sigint_ends(runs, write_script, monkeypatch):
    import tfstudio.core.process as process

    monkeypatch.setattr(process, "GRACE_S", 1.0)
    monkeypatch.setattr(process, "STAGE_S", 1.0)
    path = write_script(
        """
        import signal, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("looping forever", flush=True)
        while True:
            time.sleep(0.01)
        """
    )
    run = runs()
    run.launcher.start(str(path))
    wait_for(lambda: "looping forever" in run.console(), timeout=120)
    run.launcher.stop()
    # the limit is a safety net; how long each stage takes is bench/stop_time.py's figure
    ended = wait_for(lambda: run.ended(), timeout=120)[-1]
    assert ended.status == "stopped" and "SIGTERM" in ended.message
    events = run.poll()
    stages = [(i, e.detail) for i, e in enumerate(events) if isinstance(e, EngineStatus)]
    asked = [i for i, d in stages if "batch boundary" in d]
    sigint = [i for i, d in stages if "SIGINT" in d]
    sigterm = [i for i, d in stages if "SIGTERM" in d]
    # one stage after the other, each given its time: grace, then SIGINT's stage, then SIGTERM
    assert asked and sigint and sigterm
    assert asked[0] < sigint[0] < sigterm[0] < events.index(ended)


def test_stop_interrupts_a_script_stuck_between_fits_with_keyboardinterrupt(
    runs, write_script, monkeypatch
):
    import tfstudio.core.process as process

    monkeypatch.setattr(process, "GRACE_S", 1.0)
    path = write_script(
        """
        import time
        print("sleeping", flush=True)
        try:
            time.sleep(600)
        except KeyboardInterrupt:
            print("got KeyboardInterrupt", flush=True)
            raise
        """
    )
    run = runs()
    run.launcher.start(str(path))
    wait_for(lambda: "sleeping" in run.console(), timeout=120)
    run.launcher.stop()  # between fits Stop already interrupts; here time.sleep is one C call
    ended = wait_for(lambda: run.ended(), timeout=30)[-1]
    assert ended.status == "stopped"


def test_a_script_setting_tf_environment_gets_a_cold_worker_and_is_still_monitored(
    runs, write_script
):
    path = write_script(
        """
        import os
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import numpy as np, keras
        m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        m.fit(np.zeros((40, 2)), np.zeros((40, 1)), batch_size=10, epochs=1, verbose=0)
        """
    )
    run = runs(keep_spare=True)
    ended = run.run(path)
    assert ended.status == "finished" and ended.global_step == 4
    assert run.launcher.last_start_cold == ["TF_CPP_MIN_LOG_LEVEL"]
    assert "fresh process" in run.console()
    assert len([e for e in step_rows(run.poll()) if isinstance(e, StepEnded)]) == 4
    assert [e.devices for e in run.poll() if isinstance(e, RunDevices)] == [("CPU",)]


def test_a_warm_spare_runs_the_script_in_its_own_process_without_loading(runs, write_script):
    run = runs(keep_spare=True)
    run.launcher.prepare()
    wait_for(lambda: run.launcher.spare is not None and run.launcher.spare.ready.is_set(), 120)
    spare_pid = run.launcher.spare.pid
    assert run.run(write_script("import os\nprint('pid', os.getpid())\n")).status == "finished"
    started = [e for e in run.poll() if isinstance(e, RunStarted)][-1]
    assert started.pid == spare_pid != os.getpid()
    assert f"pid {spare_pid}" in run.console()
    assert not any(isinstance(e, EngineStatus) and e.state == "loading" for e in run.poll())
    # after the run, a new spare is made ready for the next one
    wait_for(lambda: run.launcher.spare is not None and run.launcher.spare.pid != spare_pid, 30)


def test_a_python_that_cannot_start_a_worker_is_refused_clearly(write_script):
    channel = Channel()
    launcher = ProcessLauncher(channel, python="/nonexistent/python3", keep_spare=False)
    with pytest.raises(RuntimeError, match="could not start a worker process"):
        launcher.start(str(write_script(OK)))
    assert not launcher.is_running()
    launcher.shutdown()


def test_a_tensorflow_that_fails_to_import_fails_the_run_with_the_reason(
    runs, write_script, tmp_path, monkeypatch
):
    fake = tmp_path / "site"
    (fake / "tensorflow").mkdir(parents=True)
    (fake / "tensorflow" / "__init__.py").write_text(
        "raise ImportError('libcudart.so.12 missing')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(fake))
    run = runs()
    ended = run.run(write_script(OK))
    assert ended.status == "failed" and ended.exit_code != 0
    assert "TensorFlow failed to import" in ended.message + run.console()
    assert "libcudart.so.12 missing" in run.console()


def test_describe_exit_names_signals_and_exit_codes():
    assert describe_exit(-signal.SIGABRT)[:2] == ("failed", 134)
    assert "aborted" in describe_exit(-signal.SIGABRT)[2]
    assert describe_exit(0) == ("finished", 0, "the script's process exited with os._exit(0)")
    assert describe_exit(-9, killed_by_us="SIGKILL")[0] == "stopped"
    assert "out-of-memory killer (SIGKILL)" in describe_exit(-9, oom_killed=True)[2]
    assert "did not act" in describe_exit(-9, oom_killed=False)[2]
    assert "out of memory?" in describe_exit(-9, oom_killed=None)[2]


# -- headless and the window, as processes ------------------------------------


def tfstudio(*args: str, timeout: float = 180, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env.update(kwargs.pop("env", {}))
    return subprocess.run(
        [sys.executable, "-m", "tfstudio", *args],
        cwd=kwargs.pop("cwd", ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def test_headless_runs_a_script_with_a_signal_handler_and_a_crash_exits_139(write_script):
    handler = write_script(
        "import signal\nsignal.signal(signal.SIGTERM, lambda *a: None)\nprint('ok')\n", "h.py"
    )
    result = tfstudio("run", str(handler))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok" in result.stdout
    crash = write_script("import ctypes\nctypes.string_at(0)\n", "crash.py")
    result = tfstudio("run", str(crash))
    assert result.returncode == 139
    assert "segmentation fault" in result.stderr


def test_the_window_process_never_imports_tensorflow_and_leaves_no_child(write_script, tmp_path):
    script = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        m.fit(np.zeros((40, 2)), np.zeros((40, 1)), batch_size=10, epochs=1, verbose=0)
        """
    )
    probe = (
        "import sys, atexit\n"
        "from tfstudio.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "bad = [m for m in ('tensorflow', 'keras', 'tfstudio.engine') if m in sys.modules]\n"
        "print('window imported:', bad)\n"
        "sys.exit(code)\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    proc = psutil.Popen(
        [sys.executable, "-c", probe, str(script), "--run", "--quit-when-done"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[int] = set()
    deadline = time.monotonic() + 180
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            seen.update(c.pid for c in proc.children(recursive=True))
        except psutil.Error:
            pass
        time.sleep(0.1)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-3000:]
    assert "window imported: []" in out
    assert seen, "the run should have happened in a child process"
    wait_for(lambda: not any(psutil.pid_exists(p) and _alive(p) for p in seen), timeout=15)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_closing_the_window_during_a_run_ends_its_workers(qtbot, write_script, tmp_path):
    from PySide6.QtCore import QSettings

    from tfstudio.ui.main_window import MainWindow

    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=True)
    win = MainWindow(channel, launcher, QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    qtbot.addWidget(win)
    win.show()
    launcher.prepare()
    path = write_script(
        "import time\nprint('busy', flush=True)\nwhile True:\n    time.sleep(0.05)\n"
    )
    assert win.open_script(str(path)) and win.run_script()
    qtbot.waitUntil(lambda: "busy" in win.console.text(), timeout=120_000)
    workers = {launcher.pid()} | {c.pid for c in psutil.Process().children(recursive=True)}
    win.close()
    launcher.shutdown()  # what the app does when its window closes (aboutToQuit)
    win.bridge.stop()
    assert not any(_alive(p) for p in workers)
