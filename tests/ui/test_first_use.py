"""What a new user meets first on the command line (issue 52): `tfstudio check` on a file
that does not parse, no display, `tfstudio runs`, the help's folders, and where the runs
of a bundled example go. Quick lane: nothing here imports TensorFlow.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from tests.ui.conftest import FakeLauncher
from tfstudio.cli import headless_parser, main
from tfstudio.core.channel import Channel
from tfstudio.core.resources import default_example, examples, resources_dir
from tfstudio.core.runs import resolve_logdir
from tfstudio.engine.checkpoints import default_directory
from tfstudio.ui.main_window import MainWindow

ROOT = Path(__file__).resolve().parents[2]


# -- tfstudio check --------------------------------------------------------------------
BROKEN = "import tensorflow as tf\n\ndef f(x:\n    return x\n"


def test_check_reports_a_file_that_does_not_parse_with_file_line_and_fails(tmp_path, capsys):
    bad = tmp_path / "bad_syntax.py"
    bad.write_text(BROKEN)
    assert main(["check", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert "no pitfalls found" not in out + err
    first = err.splitlines()[0]
    assert first == f"{bad}:3:6: SyntaxError: '(' was never closed"
    assert "    def f(x:" in err


def test_check_names_each_broken_file_and_still_checks_the_others(tmp_path, capsys):
    bad = tmp_path / "indent.py"
    bad.write_text("x = 1\n    y = 2\n")
    good = tmp_path / "good.py"
    good.write_text("x = 1\n")
    assert main(["check", str(bad), str(good)]) == 2
    out, err = capsys.readouterr()
    where = re.escape(str(bad))
    assert re.match(rf"{where}:2:\d+: IndentationError: unexpected indent$", err, re.M)
    assert "no pitfalls found" not in out
    # a clean file on its own is still clean
    assert main(["check", str(good)]) == 0
    assert "no pitfalls found" in capsys.readouterr().out


# -- no display ------------------------------------------------------------------------
@pytest.mark.parametrize("display", [None, ":4242"], ids=["unset", "no-server"])
def test_the_window_without_a_display_says_what_to_do_and_exits_2_without_abort(tmp_path, display):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    if display:
        env["DISPLAY"] = display
    result = subprocess.run(
        [sys.executable, "-m", "tfstudio"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert err.startswith("tfstudio: no display to open the window on")
    assert "DISPLAY" in err and "tfstudio run SCRIPT" in err
    assert "QT_QPA_PLATFORM=offscreen" in err
    assert "qt.qpa" not in err and "Aborted" not in err


def test_display_problem_only_where_qt_would_abort():
    from tfstudio.cli import display_problem

    assert display_problem({}, "linux") is not None
    assert display_problem({"QT_QPA_PLATFORM": "xcb"}, "linux") is not None
    assert display_problem({"QT_QPA_PLATFORM": "xcb", "WAYLAND_DISPLAY": "w"}, "linux")
    assert display_problem({"DISPLAY": "localhost:10.0"}, "linux") is None
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "wayland"}, "linux") is None
    assert display_problem({}, "darwin") is None


def test_a_local_display_with_no_x_server_is_named_too(tmp_path):
    """A stale DISPLAY (an X server gone, a tmux session outliving it) aborts Qt as well."""
    from tfstudio.cli import display_problem

    env = {"DISPLAY": ":4242"}
    said = display_problem(env, "linux", x11_sockets=str(tmp_path))
    assert said is not None and "DISPLAY=:4242, but no X server listens on it" in said
    (tmp_path / "X4242").touch()  # the server's socket
    assert display_problem(env, "linux", x11_sockets=str(tmp_path)) is None
    assert display_problem({"DISPLAY": ":4242.0"}, "linux", x11_sockets=str(tmp_path)) is None
    # remote displays (ssh -X) are not judged
    assert display_problem({"DISPLAY": "localhost:10.0"}, "linux", str(tmp_path)) is None


# -- the help names the folders things really go to ----------------------------------
def _help_of(option: str) -> str:
    action = next(a for a in headless_parser()._actions if option in a.option_strings)
    return " ".join(action.help.split())


def test_checkpoint_dir_help_says_where_checkpoints_go(tmp_path, monkeypatch):
    text = _help_of("--checkpoint-dir")
    # a recorded run keeps them in its folder (engine/control.py ControlState.directory)
    assert "<runs directory>/<run>/checkpoints" in text
    # unrecorded: beside the script; installed code never gets them
    assert "with --no-record, tfstudio-checkpoints/<script>-<time>/ beside the script" in text
    script = tmp_path / "train.py"
    script.write_text("")
    assert default_directory(script, 0.0).parent == tmp_path.resolve() / "tfstudio-checkpoints"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    bundled = default_directory(default_example(), 0.0)
    assert bundled.parent == tmp_path / "data" / "tfstudio" / "checkpoints"
    assert "~/.local/share/tfstudio/checkpoints/" in text


# -- where runs go ---------------------------------------------------------------------
def test_runs_of_a_bundled_example_go_to_the_per_user_data_folder(tmp_path, monkeypatch):
    from tfstudio.core.locations import is_installed_code, user_data_dir

    monkeypatch.delenv("TFSTUDIO_LOGDIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert user_data_dir() == tmp_path / "data" / "tfstudio"
    user_runs = tmp_path / "data" / "tfstudio" / "runs"
    for script in examples():
        assert is_installed_code(script.parent)
        assert resolve_logdir(None, script.parent) == user_runs
    assert resolve_logdir(None, resources_dir()) == user_runs
    # a user's own folder keeps its runs beside the script, as before
    assert resolve_logdir(None, tmp_path) == tmp_path.resolve() / "tfstudio-runs"
    # an explicit choice is kept
    assert resolve_logdir(str(tmp_path / "mine"), resources_dir()) == tmp_path / "mine"
    # a folder the user cannot write to
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        if os.access(locked, os.W_OK):  # root writes anywhere
            pytest.skip("running as root: every folder is writable")
        assert resolve_logdir(None, locked) == user_runs
    finally:
        locked.chmod(0o755)


def test_runs_in_site_packages_go_to_the_per_user_data_folder(tmp_path, monkeypatch):
    import sysconfig

    from tfstudio.core.locations import user_data_dir

    monkeypatch.delenv("TFSTUDIO_LOGDIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    site = Path(sysconfig.get_paths()["purelib"]) / "tfstudio" / "resources" / "examples"
    assert resolve_logdir(None, site) == tmp_path / "data" / "tfstudio" / "runs"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert user_data_dir() == Path.home() / ".local" / "share" / "tfstudio"


def test_the_window_opened_on_the_bundled_example_lists_the_per_user_runs(
    qtbot, tmp_path, monkeypatch
):
    monkeypatch.delenv("TFSTUDIO_LOGDIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    channel = Channel()
    win = MainWindow(
        channel, FakeLauncher(channel), QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)
    )
    qtbot.addWidget(win)
    try:
        assert win.open_script(str(default_example()))
        assert win.runs.logdir == tmp_path / "data" / "tfstudio" / "runs"
        assert not (default_example().parent / "tfstudio-runs").exists()
    finally:
        win.bridge.stop()


# -- tfstudio runs ---------------------------------------------------------------------
def test_runs_on_a_missing_folder_says_no_such_folder_and_exits_2(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["runs", str(missing)]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines()[0] == f"tfstudio runs: no such folder: {missing}"
    file = tmp_path / "a.txt"
    file.write_text("")
    assert main(["runs", str(file)]) == 2
    assert f"tfstudio runs: not a folder: {file}" in capsys.readouterr().err


def _recorded(logdir: Path, name: str, started: float) -> None:
    run = logdir / name
    run.mkdir(parents=True)
    info = {"status": "finished", "start_time": started, "steps": 3, "script": "a.py"}
    (run / "run.json").write_text(json.dumps(info))


def test_runs_lists_newest_first_as_the_window_does(qtbot, tmp_path, capsys):
    logdir = tmp_path / "runs"
    # names sort the other way round from their start times
    _recorded(logdir, "a-newest", 3_000_000.0)
    _recorded(logdir, "b-middle", 2_000_000.0)
    _recorded(logdir, "c-oldest", 1_000_000.0)
    assert main(["runs", str(logdir)]) == 0
    out = capsys.readouterr().out
    header, *lines = out.splitlines()
    assert header.split()[0] == "Name"  # a table: its header first
    listed = [line.split()[0] for line in lines]
    assert listed == ["a-newest", "b-middle", "c-oldest"]
    # the window's Runs list: the same order
    channel = Channel()
    win = MainWindow(
        channel, FakeLauncher(channel), QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)
    )
    qtbot.addWidget(win)
    try:
        win.runs.set_logdir(logdir)
        tree = win.runs.tree
        qtbot.waitUntil(lambda: tree.topLevelItemCount() == 3, timeout=5000)
        assert [tree.topLevelItem(i).text(0) for i in range(3)] == listed
    finally:
        win.bridge.stop()


# -- launch: the spare worker waits for the window's first paint ---------------------
def test_after_first_paint_calls_once_after_the_windows_first_paint(qtbot):
    from PySide6.QtWidgets import QMainWindow

    from tfstudio.ui.first_paint import after_first_paint

    win = QMainWindow()
    qtbot.addWidget(win)
    painted: list[bool] = []
    calls: list[bool] = []
    win.paintEvent = lambda event: painted.append(True)  # type: ignore[method-assign]
    win.show()
    after_first_paint(win, lambda: calls.append(bool(painted)), fallback_ms=60_000)
    qtbot.waitUntil(lambda: bool(calls), timeout=5000)
    assert calls == [True]  # once, and the window had painted by then
    win.update()
    qtbot.wait(100)
    assert calls == [True]


def test_after_first_paint_still_calls_a_window_never_shown(qtbot):
    from PySide6.QtWidgets import QMainWindow

    from tfstudio.ui.first_paint import after_first_paint

    win = QMainWindow()
    qtbot.addWidget(win)
    calls: list[int] = []
    after_first_paint(win, lambda: calls.append(1), fallback_ms=50)
    qtbot.waitUntil(lambda: bool(calls), timeout=2000)
    qtbot.wait(100)
    assert calls == [1]
