"""The quick lane's guard: a run with ``-m "not tf"`` fails wherever TensorFlow gets in.

Each case runs pytest in a child process with ``tests/conftest.py`` as a plugin,
on small test files next to stand-in ``tensorflow`` and ``keras`` packages (empty:
the guard goes by the name imported, and the real ones would take seconds).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "test_clean.py": """
        def test_needs_nothing():
            assert True
    """,
    "test_marked.py": """
        import pytest
        import tensorflow

        pytestmark = pytest.mark.tf

        def test_trains():
            assert tensorflow
    """,
    "test_in_process.py": """
        def test_imports_tensorflow_here():
            import tensorflow  # noqa: F401
    """,
    "test_spawns.py": """
        import subprocess, sys

        def test_starts_a_process_that_imports_keras():
            subprocess.run([sys.executable, "-c", "import keras"], check=True)
    """,
    "test_worker.py": """
        from tfstudio.core.channel import Channel
        from tfstudio.core.process import ProcessLauncher

        def test_runs_a_script_in_a_worker(tmp_path):
            script = tmp_path / "hello.py"
            script.write_text("print('hello')")
            launcher = ProcessLauncher(Channel(), warm=False, keep_spare=False)
            launcher.start(str(script))
            assert launcher.wait(60)
            launcher.shutdown()
    """,
}

AT_THE_TOP = """
    import tensorflow

    def test_looks_harmless():
        assert tensorflow
"""


def lane(folder: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    """Run ``pytest -m "not tf"`` on ``files``, with stand-ins for TensorFlow and Keras."""
    stubs = folder / "stubs"
    for package in ("tensorflow", "keras"):
        (stubs / package).mkdir(parents=True, exist_ok=True)
        (stubs / package / "__init__.py").write_text("")
    tests = folder / "cases"
    tests.mkdir()
    (tests / "pytest.ini").write_text("[pytest]\nmarkers =\n    tf: needs TensorFlow\n")
    for name, source in files.items():
        (tests / name).write_text(textwrap.dedent(source))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFSTUDIO_TEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(stubs)])
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # a second of start-up each, none needed here
    env["COLUMNS"] = "1000"  # the summary lines whole
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-m", "not tf", "-q", "-rE"]
        + ["-p", "no:cacheprovider", str(tests)],
        capture_output=True,
        text=True,
        cwd=tests,
        env=env,
        timeout=120,
    )


def test_a_test_importing_tensorflow_or_starting_a_process_that_does_fails(tmp_path):
    # (a worker counts as such a process even before it imports TensorFlow)
    out = lane(tmp_path, FILES)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    # the three failing tests pass, then fail at teardown; test_marked.py is not even read
    assert "4 passed, 3 errors" in text, text
    lines = text.splitlines()
    in_process = next(line for line in lines if "ERROR" in line and "test_in_process" in line)
    assert "this test (" in in_process and "imported tensorflow" in in_process
    spawned = next(line for line in lines if "ERROR" in line and "test_spawns" in line)
    assert "a process it started" in spawned and "imported keras" in spawned
    worker = next(line for line in lines if "ERROR" in line and "test_worker" in line)
    assert "-m tfstudio.worker" in worker and "imported tfstudio.worker" in worker
    assert "mark the test (or its file) with pytest.mark.tf" in text
    assert "the quick lane imported tensorflow in the test process" in text


def test_a_file_importing_tensorflow_at_its_top_fails_the_run(tmp_path):
    out = lane(tmp_path, {"test_unmarked.py": AT_THE_TOP})
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "1 passed" in text, text  # its test passes; the run does not
    assert "the quick lane imported tensorflow in the test process (from " in text
    assert "test_unmarked.py:2" in text
