"""Scripts run as `python script.py` would; bad input fails clearly and the next run works."""

from __future__ import annotations

import os
import socket
import sys

import pytest

from tests.engine.helpers import console, of, run_script
from tfstudio.core.events import RunStarted, StepEnded

pytestmark = pytest.mark.tf


def test_script_runs_as_main_with_argv_path_and_cwd(write_script, tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    path = write_script(
        """
        import os, sys
        import helper_mod
        print("name", __name__)
        print("argv", sys.argv)
        print("path0", sys.path[0])
        print("cwd", os.getcwd())
        print("value", helper_mod.VALUE + 1)
        """
    )
    argv_before, cwd_before = list(sys.argv), os.getcwd()
    ended, events = run_script(path, ["--epochs", "3"], cwd=tmp_path)
    out = console(events, "stdout")
    assert ended.status == "finished" and ended.exit_code == 0, console(events)
    assert "name __main__" in out
    assert f"argv ['{path}', '--epochs', '3']" in out
    assert f"path0 {tmp_path}" in out
    assert f"cwd {tmp_path}" in out
    assert "value 42" in out
    assert of(events, RunStarted)[0].argv == (str(path), "--epochs", "3")
    # process state is put back and the script's own module is forgotten
    assert sys.argv == argv_before and os.getcwd() == cwd_before
    assert str(tmp_path) not in sys.path and "helper_mod" not in sys.modules


def test_headless_style_run_keeps_the_callers_cwd(write_script):
    path = write_script("import os\nprint('cwd', os.getcwd())\n")
    ended, events = run_script(path, cwd=None)
    assert f"cwd {os.getcwd()}" in console(events, "stdout")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "missing.py", "No such file"),
        (lambda d: (d / "notes.txt").write_text("hi") and d / "notes.txt", "expected a .py file"),
        (lambda d: (d / "blob.py").write_bytes(b"\x00\x01ELF") and d / "blob.py", "binary data"),
        (lambda d: (d / "pkg.py").mkdir() or d / "pkg.py", "is a folder"),
    ],
    ids=["missing", "not-python", "binary", "folder"],
)
def test_bad_paths_are_refused_and_nothing_runs(tmp_path, make, expected):
    path = make(tmp_path)
    ended, events = run_script(path)
    assert ended.status == "failed" and ended.exit_code == 2
    assert expected in ended.message
    assert expected in console(events, "tfstudio")
    assert not of(events, RunStarted)


def test_unreadable_script_is_refused(tmp_path):
    # A socket file cannot be opened for reading, even by root (chmod would not stop root).
    path = tmp_path / "sock.py"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        ended, events = run_script(path)
    finally:
        server.close()
    assert ended.status == "failed" and "Cannot read" in ended.message
    assert not of(events, RunStarted)


def test_syntax_error_points_at_file_and_line(write_script):
    path = write_script("x = 1\ny = (2,\nprint(x\n")
    ended, events = run_script(path)
    assert ended.status == "failed" and ended.exit_code == 1
    assert ended.error.type_name == "SyntaxError"
    assert ended.error.filename == str(path) and ended.error.lineno in (2, 3)
    assert f"{path}" in console(events, "stderr")
    assert str(path) in ended.message


def test_exception_shows_traceback_and_the_next_run_works(write_script):
    bad = write_script(
        """
        def load():
            return {}["missing key"]

        load()
        """,
        name="bad.py",
    )
    ended, events = run_script(bad)
    assert ended.status == "failed" and ended.exit_code == 1
    assert (ended.error.type_name, ended.error.filename, ended.error.lineno) == (
        "KeyError",
        str(bad),
        3,
    )
    text = console(events, "stderr")
    assert "Traceback (most recent call last)" in text and f'File "{bad}", line 5' in text
    assert "tfstudio/engine" not in text  # our own frames are left out
    good = write_script("print('second run fine')\n", name="good.py")
    ended, events = run_script(good)
    assert ended.status == "finished" and "second run fine" in console(events)


@pytest.mark.parametrize(("code", "status", "exit_code"), [(3, "failed", 3), (0, "finished", 0)])
def test_sys_exit_ends_the_run_not_the_app(write_script, code, status, exit_code):
    path = write_script(f"import sys\nprint('before')\nsys.exit({code})\nprint('after')\n")
    ended, events = run_script(path)
    assert (ended.status, ended.exit_code) == (status, exit_code)
    assert "before" in console(events) and "after" not in console(events)
    assert "sys.exit" in ended.message


def test_input_gets_eof_with_a_clear_message(write_script):
    path = write_script("name = input('your name? ')\nprint('hello', name)\n")
    ended, events = run_script(path)
    assert ended.status == "failed"
    assert ended.error.type_name == "EOFError" and ended.error.lineno == 1
    assert "no terminal" in ended.error.message
    assert "your name? " in console(events, "stdout")


def test_script_without_fit_finishes_and_says_so(write_script):
    ended, events = run_script(write_script("print(sum(range(10)))\n"))
    assert ended.status == "finished" and ended.fits == 0
    assert "no fit was monitored" in ended.message
    assert not of(events, StepEnded)


def test_plt_show_does_not_block(write_script):
    pytest.importorskip("matplotlib")
    path = write_script(
        """
        import matplotlib.pyplot as plt
        plt.plot([1, 2, 3])
        plt.show()
        print("after show", plt.get_backend())
        """
    )
    ended, events = run_script(path)
    assert ended.status == "finished", console(events)
    assert "after show agg" in console(events, "stdout").lower()
