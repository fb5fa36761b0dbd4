"""`tfstudio run SCRIPT`: the engine in a terminal, each bundled example included."""

from __future__ import annotations

import re

import pytest

from tfstudio.core.resources import examples
from tfstudio.headless import run_headless

pytestmark = pytest.mark.tf

QUICK_ARGS = {
    "linear_regression.py": ["--epochs", "2"],
    "mlp_classifier.py": ["--epochs", "1", "--samples", "1200"],
    "cnn_shapes.py": ["--epochs", "1", "--samples", "256"],
    "basic_training_loop.py": [],
}


def test_every_bundled_example_is_covered():
    assert sorted(p.name for p in examples()) == sorted(QUICK_ARGS)


@pytest.mark.parametrize("name", sorted(QUICK_ARGS))
def test_example_runs_headless_with_per_step_points(name, capfd):
    script = next(p for p in examples() if p.name == name)
    code = run_headless(str(script), QUICK_ARGS[name])
    out, err = capfd.readouterr()
    assert code == 0, out + err
    if name == "basic_training_loop.py":  # a custom loop: no fit, no epochs
        assert "tfstudio: loop 1: linear" in err
        assert "Run finished after" in err and "0 fits, 1 loop, 300 steps" in err
        return
    assert "tfstudio: fit 1:" in err
    steps = int(re.search(r"Run finished after [\d:.]+(?: s)?: 1 fit, (\d+) steps", err).group(1))
    assert steps > 0
    assert "tfstudio: epoch" not in err  # never a line of ours per epoch
    if name == "linear_regression.py":  # verbose=0: one line of ours at the fit's end
        assert re.search(rf"tfstudio: fit 1 done: 2 epochs, {steps} steps - loss: ", err), err
    else:  # verbose=2: Keras prints each epoch's metrics itself, once; nothing of ours
        assert re.search(r"\d+/\d+ - .*loss: ", out) and "fit 1 done" not in err


def test_headless_failure_returns_nonzero_with_the_traceback(write_script, capfd):
    path = write_script("x = 1\nraise RuntimeError('broken data pipeline')\n")
    code = run_headless(str(path))
    _, err = capfd.readouterr()
    assert code == 1
    assert "RuntimeError: broken data pipeline" in err
    assert f'File "{path}", line 2' in err


def test_headless_passes_the_scripts_exit_status(write_script, capfd):
    path = write_script("import sys\nprint('partial')\nsys.exit(4)\n")
    assert run_headless(str(path)) == 4
    out, _ = capfd.readouterr()
    assert "partial" in out


def test_headless_keeps_the_callers_working_directory(write_script, capfd, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = write_script("import os\nprint('cwd=' + os.getcwd())\n")
    assert run_headless(str(path)) == 0
    out, _ = capfd.readouterr()
    assert f"cwd={elsewhere}" in out


def test_ctrl_c_stops_a_headless_run_at_a_batch_boundary(write_script):
    import signal
    import subprocess
    import sys
    import time

    path = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        m.fit(np.zeros((6400, 4)), np.zeros((6400, 1)), batch_size=8, epochs=100, verbose=0)
        print("after fit")
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfstudio", "run", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        seen = ""
        while "fit 1:" not in seen and time.monotonic() < deadline:
            seen += proc.stderr.readline()
        assert "fit 1:" in seen, seen
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Run stopped" in err and "after fit" not in out


def test_headless_peak_memory_comes_from_the_workers_samples(write_script, capfd, monkeypatch):
    """The worker samples its run once a second (SystemSampled, recorded as system/...):
    the terminal's peak-memory line is made of those samples, and the viewer samples the
    worker from outside no more (one sampling, not two)."""
    from tfstudio import headless

    watches = []

    class Kept(headless.ResourceWatch):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            watches.append(self)

    monkeypatch.setattr(headless, "ResourceWatch", Kept)
    path = write_script(
        "import time\nblock = bytearray(64 << 20)\ntime.sleep(1.5)\nprint('done', len(block))\n"
    )
    assert run_headless(str(path)) == 0
    _, err = capfd.readouterr()
    [watch] = watches
    assert watch.worker_samples >= 1 and watch.outside_samples == 0
    assert watch.peaks.host_rss >= 64 << 20  # the script's block is in the worker's figures
    assert re.search(r"tfstudio: peak memory: host \d", err), err
