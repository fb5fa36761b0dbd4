"""`tfstudio run`: the lines a user reads in the terminal, exactly (issue 53's headless part).

Three runs of tiny scripts serve all the tests here: a log (stdout and stderr captured,
as in CI), a pseudo-terminal (as at a desk), and a run that fails.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

# Two eager loops around a line of the script's own, then a subclassed model (not built
# when its fit starts) fitted silently for 100 epochs of one step, then a Sequential
# without Input whose fit prints its own epoch (verbose=2).
LOOPS_AND_FITS = """
import numpy as np, tensorflow as tf, keras
x = np.random.RandomState(0).rand(64, 8).astype("float32")
y = (x.sum(1) > 4).astype("int32")
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

def train(model, opt, name):
    for epoch in range(3):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
        print(name, "epoch", epoch, round(float(loss), 4))

first = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)], name="first")
train(first, keras.optimizers.SGD(0.01), "loop1")
print("between the loops")
second = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)], name="second")
train(second, keras.optimizers.SGD(0.01), "loop2")

class Net(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.hidden = keras.layers.Dense(4, activation="relu")
        self.out = keras.layers.Dense(2)

    def call(self, inputs):
        return self.out(self.hidden(inputs))

net = Net()
net.compile("sgd", loss_fn)
last_epoch = keras.callbacks.LambdaCallback(
    on_epoch_end=lambda epoch, logs: epoch == 99 and print("net epoch", epoch + 1)
)
net.fit(x, y, batch_size=64, epochs=100, verbose=0, callbacks=[last_epoch])
print("after the net fit")
plain = keras.Sequential([keras.layers.Dense(2)], name="plain")
plain.compile("sgd", loss_fn)
plain.fit(x, y, batch_size=32, epochs=1, verbose=2)
print("script done")
"""


def _tf_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("tfstudio:")]


@pytest.fixture(scope="module")
def log_run(tmp_path_factory):
    """LOOPS_AND_FITS run headless into a log, TensorFlow's start-up messages on."""
    root = tmp_path_factory.mktemp("log_run")
    script = root / "loops_and_fits.py"
    script.write_text(textwrap.dedent(LOOPS_AND_FITS))
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = subprocess.run(
        [sys.executable, "-m", "tfstudio", "run", "--logdir", str(root / "runs"), str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one log of both streams, in the order written (2>&1)
        text=True,
        timeout=300,
        cwd=root,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout
    return proc.stdout, root


def test_fits_and_loops_are_numbered_apart_and_the_summary_matches(log_run):
    err, _ = log_run
    lines = _tf_lines(err)
    announced = [line for line in lines if re.match(r"tfstudio: (fit|loop) \d+: \w+ \(", line)]
    assert announced == [
        "tfstudio: loop 1: first (custom training loop)",
        "tfstudio: loop 2: second (custom training loop)",
        "tfstudio: fit 1: net (Net, not built yet), 100 epochs",
        "tfstudio: fit 2: plain (Sequential, not built yet), 1 epoch",
    ]
    assert re.search(r"Run finished after [\d:.]+(?: s)?: 2 fits, 2 loops, 108 steps", err), err


def test_parameters_are_counted_once_the_model_is_built(log_run):
    err, root = log_run
    lines = _tf_lines(err)
    assert "tfstudio: fit 1: model built: 46 params" in lines  # 8*4+4 + 4*2+2
    assert "tfstudio: fit 2: model built: 18 params" in lines  # 8*2+2
    assert not any("0 params" in line for line in lines)
    (run_dir,) = (root / "runs").iterdir()
    segments = json.loads((run_dir / "run.json").read_text())["segments"]
    assert [s["params"] for s in segments if s.get("kind") == "fit" and "loop" not in s] == [
        46,
        18,
    ]


def test_a_silent_fit_gets_one_line_at_its_end_and_none_per_epoch(log_run):
    err, _ = log_run
    lines = _tf_lines(err)
    assert not any(line.startswith("tfstudio: epoch") for line in lines)
    done = [line for line in lines if " done: " in line]
    assert len(done) == 1, lines  # the verbose=2 fit printed its own epoch: nothing of ours
    assert re.fullmatch(r"tfstudio: fit 1 done: 100 epochs, 100 steps - loss: [\d.e+-]+", done[0])


def test_tfstudio_lines_are_in_order_with_the_scripts_output(log_run):
    log, _ = log_run
    lines = log.splitlines()
    order = [
        "tfstudio: loop 1: first (custom training loop)",
        "loop1 epoch 0",
        "loop1 epoch 2",
        "between the loops",
        "tfstudio: loop 2: second (custom training loop)",
        "loop2 epoch 0",
        "loop2 epoch 2",
        "tfstudio: fit ",  # (numbered apart from loops: another test)
        "net epoch 100",  # printed by a callback at the fit's last epoch end
        "tfstudio: fit 1 done",  # the fit's end, a moment later
        "after the net fit",  # once fit returned
        "script done",
    ]
    at = [next(i for i, line in enumerate(lines) if line.startswith(text)) for text in order]
    assert at == sorted(at), log


def test_tensorflow_start_up_is_one_line_and_kept_in_the_run_folder(log_run):
    err, root = log_run
    assert "cudart_stub" not in err and "cpu_feature_guard" not in err and "port.cc" not in err
    folded = [line for line in _tf_lines(err) if line.startswith("tfstudio: TensorFlow started")]
    assert len(folded) == 1
    n = int(re.fullmatch(
        r"tfstudio: TensorFlow started \((\d+) start-up lines? hidden; --verbose shows them\)",
        folded[0],
    ).group(1))  # fmt: skip
    (run_dir,) = (root / "runs").iterdir()
    kept = (run_dir / "startup.log").read_text().splitlines()
    assert len(kept) == n >= 1
    assert all(re.match(r"(WARNING: All log messages|[IWEF]\d{4} )", line) for line in kept), kept


def _pty_run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """``tfstudio run ARGS`` with a pseudo-terminal as stdin, stdout and stderr."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfstudio", "run", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    data = b""
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            data += chunk
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    return proc.returncode, data.decode("utf-8", "replace")


_ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen(text: str) -> list[str]:
    """The lines a terminal shows after ``text``: each ``\\r`` overwrites from column 0."""
    shown = []
    for raw in _ESC.sub("", text).replace("\r\n", "\n").split("\n"):
        cells: list[str] = []
        col = 0
        for part in re.split(r"(\r)", raw):
            if part == "\r":
                col = 0
                continue
            for ch in part:
                if ch == "\b":
                    col = max(0, col - 1)
                    continue
                if col < len(cells):
                    cells[col] = ch
                else:
                    cells.append(ch)
                col += 1
        shown.append("".join(cells).rstrip())
    return shown


TERMINAL = """
import numpy as np, keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="bars")
m.compile("sgd", "mse")
x, y = np.zeros((640, 4)), np.zeros((640, 1))
print("before the fits")
m.fit(x, y, batch_size=8, epochs=2, verbose=1)
m.fit(x, y, batch_size=64, epochs=30, verbose=0)
print("after the fits")
"""


@pytest.fixture(scope="module")
def terminal_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("terminal_run")
    script = root / "bars.py"
    script.write_text(textwrap.dedent(TERMINAL))
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    code, text = _pty_run(["--no-record", str(script)], root, env)
    assert code == 0, text
    return text


def test_on_a_terminal_kerass_bars_stay_whole_and_our_lines_sit_between(terminal_run):
    shown = screen(terminal_run)
    bars = [line for line in shown if "━" in line]
    assert len(bars) == 2, shown  # one finished bar per epoch, none cut by a line of ours
    for bar in bars:
        assert re.match(r"^80/80 ━+ .*loss: ", bar), shown
    assert "Model dock" not in terminal_run and " dock" not in terminal_run
    at = shown.index("Epoch 1/2")
    assert shown[at + 1].startswith("80/80 ━")  # the bar right below its epoch line
    assert (
        shown.index("before the fits")
        < shown.index("tfstudio: fit 1: bars (Sequential, 5 params), 2 epochs")
        < at
    )


def test_on_a_terminal_a_silent_fit_is_one_line_in_place_and_a_line_at_its_end(terminal_run):
    shown = screen(terminal_run)
    assert [line for line in shown if line.startswith("tfstudio: fit 2")] == [
        "tfstudio: fit 2: bars (Sequential, 5 params), 30 epochs",
        *[line for line in shown if line.startswith("tfstudio: fit 2 done:")],
    ]
    (done,) = [line for line in shown if line.startswith("tfstudio: fit 2 done:")]
    assert re.fullmatch(r"tfstudio: fit 2 done: 30 epochs, 300 steps - loss: [\d.e+-]+", done)
    assert not any(line.startswith("tfstudio: epoch") for line in shown)
    assert "\r[" in terminal_run  # the progress line, redrawn in place
    assert shown.index(done) < shown.index("after the fits")


def test_a_failed_runs_time_counts_from_its_start_and_counts_announced_fits(write_script):
    path = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        m.fit(np.zeros((8, 4)), np.zeros((8, 1)), epochs=1, verbose=0)
        m.fit(np.zeros((10, 4)), np.zeros((7, 1)), epochs=1, verbose=0)  # fails at once
        """
    )
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfstudio", "run", "--no-record", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        summary = None
        for line in proc.stderr:
            summary = re.match(
                r"tfstudio: Run failed after ([\d:.]+)( s)?: (.*?) — ValueError", line
            )
            if summary:
                took = time.perf_counter() - t0  # the user's wait until the summary
                break
        proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1 and summary is not None
    shown, seconds = summary.group(1), summary.group(2)
    if seconds:
        said = float(shown)
    else:
        minutes, secs = shown.split(":")
        said = int(minutes) * 60 + int(secs)
    # the whole run, starting Python and TensorFlow included (not the script's last second);
    # only the command's own start-up, before it starts the run, is left out
    assert 0.75 * took - 1 <= said <= took + 1
    assert summary.group(3) == "1 fit, 1 step"  # the failed fit was never announced


def test_verbose_shows_tensorflows_start_up_lines_as_they_come(write_script):
    path = write_script("import tensorflow as tf\nprint('sum', int(tf.reduce_sum([1, 2])))\n")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = subprocess.run(
        [sys.executable, "-m", "tfstudio", "run", "--verbose", "--no-record", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "sum 3" in proc.stdout
    assert "port.cc" in proc.stderr or "cudart_stub.cc" in proc.stderr, proc.stderr
    assert "start-up lines hidden" not in proc.stderr
