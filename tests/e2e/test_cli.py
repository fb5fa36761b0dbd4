"""The command line: entry points, --version without TensorFlow, --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tfstudio import __version__

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def test_version_answers_without_importing_tensorflow_or_qt():
    result = run("-X", "importtime", "-m", "tfstudio", "--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"tfstudio {__version__}"
    imported = result.stderr
    assert "tensorflow" not in imported and "PySide6" not in imported


def test_main_py_and_module_share_the_cli():
    for entry in (["main.py"], ["-m", "tfstudio"]):
        result = run(*entry, "--help")
        assert result.returncode == 0
        assert "--quit-when-done" in result.stdout and "--screenshot" in result.stdout
        assert "--x-axis" in result.stdout
    result = run("-m", "tfstudio", "run", "--help")
    assert result.returncode == 0 and "script" in result.stdout


def test_console_script_is_installed():
    import shutil

    beside = Path(sys.executable).parent / "tfstudio"  # the environment running the tests
    exe = str(beside) if beside.exists() else shutil.which("tfstudio")
    assert exe is not None, "the tfstudio console script is not on PATH (pip install -e .)"
    result = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == f"tfstudio {__version__}"


def test_window_side_imports_leave_tensorflow_for_the_background():
    """The window can appear before TensorFlow is imported (it loads in a thread)."""
    code = (
        "import sys\n"
        "import tfstudio.app, tfstudio.engine.session, tfstudio.ui.main_window\n"
        "print('tensorflow' in sys.modules, 'keras' in sys.modules)\n"
    )
    result = run("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_no_inspector_flag_reaches_the_run_options_of_both_viewers():
    from tfstudio.cli import gui_parser, headless_parser, run_options

    assert run_options(gui_parser().parse_args(["--no-inspector"])).inspector is False
    assert run_options(gui_parser().parse_args([])).inspector is True
    ns = headless_parser().parse_args(["--no-inspector", "train.py"])
    assert run_options(ns).inspector is False


def test_script_arguments_without_the_separator_say_where_they_go(tmp_path):
    """`tfstudio train.py --epochs 3` (as `tfstudio run` takes them) names the fix."""
    result = run("-m", "tfstudio", str(tmp_path / "train.py"), "--epochs", "3")
    assert result.returncode == 2
    assert f"tfstudio {tmp_path / 'train.py'} -- --epochs 3" in result.stderr


def test_tfstudios_own_options_after_the_script_say_they_go_to_the_script():
    """`tfstudio run train.py --checkpoint-every 500` passes the option to the script (as
    python would): a note says so and shows where it goes; the script's own are left be."""
    from tfstudio.cli import headless_parser, misplaced_options

    parser = headless_parser()
    args = ["--epochs", "3", "--checkpoint-every", "500", "--no-record", "--lr=0.1", "-h"]
    notes = misplaced_options(parser, "/proj/train.py", args)
    assert notes == [
        "tfstudio: note: --checkpoint-every comes after the script, so it goes to the script, "
        "not to tfstudio; tfstudio's own options come first: "
        "tfstudio run --checkpoint-every 500 train.py",
        "tfstudio: note: --no-record comes after the script, so it goes to the script, "
        "not to tfstudio; tfstudio's own options come first: tfstudio run --no-record train.py",
        "tfstudio: note: --lr comes after the script, so it goes to the script, "
        "not to tfstudio; tfstudio's own options come first: tfstudio run --lr=0.1 train.py",
    ]
    assert misplaced_options(parser, "train.py", ["--epochs", "3"]) == []
