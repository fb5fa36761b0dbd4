"""The real window with the real engine: examples, two fits, stop, bad input."""

from __future__ import annotations

import time

import pytest

from tfstudio.core.resources import default_example, examples

pytestmark = pytest.mark.tf

QUICK_ARGS = {
    "linear_regression.py": ["--epochs", "2"],
    "mlp_classifier.py": ["--epochs", "1", "--samples", "1200"],
    "cnn_shapes.py": ["--epochs", "1", "--samples", "256"],
    "basic_training_loop.py": [],
}
EXPECTED_STEPS = {
    "linear_regression.py": 40,
    "mlp_classifier.py": 30,
    "cnn_shapes.py": 8,
    "basic_training_loop.py": 300,
}


def run_to_end(qtbot, win, args=(), timeout=120_000):
    with qtbot.waitSignal(win.run_finished, timeout=timeout) as blocker:
        assert win.run_script(args)
    return tuple(blocker.args)


def step_points(win, family="loss"):
    plot = win.metrics.plots[family]
    return max(c.count() for c in plot.curves())


@pytest.mark.parametrize("name", sorted(QUICK_ARGS))
def test_example_runs_in_the_window_with_per_step_points(qtbot, window, name):
    script = next(p for p in examples() if p.name == name)
    assert window.open_script(str(script))
    status, code = run_to_end(qtbot, window, QUICK_ARGS[name])
    assert (status, code) == ("finished", 0), window.console.text()[-2000:]
    assert step_points(window) == EXPECTED_STEPS[name]
    if name not in ("linear_regression.py", "basic_training_loop.py"):
        assert "accuracy" in window.metrics.plots
        assert any("val_loss" in label for label in window.metrics.plots["loss"].legend_labels())
    assert "Run finished" in window.console.text()
    assert window.state() == "finished"


def test_two_fits_show_as_segments_and_a_failed_run_is_followed_by_a_good_one(
    qtbot, window, write_script
):
    bad = write_script("import numpy as np\nvalues = np.zeros(3)\nprint(values[7])\n", "bad.py")
    assert window.open_script(str(bad))
    status, code = run_to_end(qtbot, window)
    assert (status, code) == ("failed", 1)
    text = window.console.text()
    assert "IndexError" in text and f'File "{bad}", line 3' in text
    assert "bad.py:3" in window.status.state_text()
    two = write_script(
        """
        import numpy as np, keras
        x = np.zeros((40, 2), "float32"); y = np.zeros((40, 1), "float32")
        for units in (1, 2):
            m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(units)], name=f"m{units}")
            m.compile("sgd", "mse")
            m.fit(x, y, batch_size=10, epochs=1, verbose=0)
        """,
        "two.py",
    )
    assert window.open_script(str(two))
    assert run_to_end(qtbot, window) == ("finished", 0)
    assert step_points(window) == 8
    assert any("m2" in label for label in window.metrics.plots["loss"].fit_marker_labels())


def test_stop_in_the_window_ends_the_run_within_a_batch(qtbot, window, write_script):
    path = write_script(
        """
        import numpy as np, keras
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        m.fit(np.zeros((6400, 4)), np.zeros((6400, 1)), batch_size=8, epochs=100, verbose=0)
        print("after fit")
        """
    )
    assert window.open_script(str(path))
    assert window.run_script()
    qtbot.waitUntil(
        lambda: "loss" in window.metrics.plots and step_points(window) > 5, timeout=60_000
    )
    with qtbot.waitSignal(window.run_finished, timeout=60_000) as blocker:
        window.stop_action.trigger()
    assert blocker.args[0] == "stopped"
    assert "after fit" not in window.console.text()
    assert window.run_action.isEnabled() and not window.stop_action.isEnabled()
    ok = write_script("print('next run')\n", "next.py")
    assert window.open_script(str(ok))
    assert run_to_end(qtbot, window) == ("finished", 0)


def test_the_window_pulls_each_batch_from_the_worker_and_every_step_arrives(
    qtbot, window, write_script
):
    path = write_script(
        """
        import time
        import numpy as np, keras

        class Slow(keras.callbacks.Callback):  # ~2.5 s of steps: tens of redraws
            def on_train_batch_end(self, batch, logs=None):
                time.sleep(0.0125)

        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        x = np.linspace(0, 1, 4 * 6400, dtype="float32").reshape(6400, 4)
        m.fit(x, x.sum(1), batch_size=32, epochs=1, verbose=0, callbacks=[Slow()])
        """
    )
    assert window.open_script(str(path))
    assert run_to_end(qtbot, window) == ("finished", 0), window.console.text()[-2000:]
    assert step_points(window) == 200  # nothing lost on the way
    bridge = window.bridge
    # the window asked before its redraws, and the worker answered (each answer's round
    # trip is measured): its pump beat when asked
    assert bridge.pulls >= 10
    assert len(bridge.round_trips) >= 5
    assert max(bridge.round_trips) < bridge.min_redraw_s()


def test_the_window_stops_asking_a_quiet_run_and_misses_no_step(
    qtbot, window, write_script, monkeypatch
):
    """A run with no news (between fits, evaluating, paused) is not asked at the redraw
    rate: the window asks only while news came less than ``quiet_pull_s`` before, and
    rests (slow ticks) otherwise. The worker's routine figures (its 1 Hz system samples,
    on a GPU its memory figures) keep coming during the quiet and are not news."""
    from PySide6.QtCore import QTimer

    from tfstudio.core import process
    from tfstudio.core.events import DeviceMemory, SystemSampled

    path = write_script(
        """
        import time
        import numpy as np, keras

        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        x = np.ones((320, 4), dtype="float32")
        m.fit(x, x.sum(1), batch_size=32, epochs=1, verbose=0)
        t0 = time.perf_counter()
        time.sleep(3.0)  # no step, no output: between fits, an evaluation, a pause
        print(f"quiet {t0!r} {time.perf_counter()!r}", flush=True)
        m.fit(x, x.sum(1), batch_size=32, epochs=1, verbose=0)
        """
    )
    launcher, bridge = window.launcher, window.bridge
    asks: list[float] = []  # when the window asked the worker for its batch
    news: list[float] = []  # when a batch with more than routine figures came
    routine: list[float] = []  # when a batch of routine figures only came
    resting: list[tuple[float, bool]] = []  # (when, the bridge rested) every 50 ms
    pull, events = launcher.pull, process._Worker._events

    def counted_pull() -> bool:
        asked = pull()
        if asked:
            asks.append(time.perf_counter())
        return asked

    def noted_events(worker: object, batch: list[object]) -> None:
        now = time.perf_counter()
        kinds = {type(e) for e in batch}
        (routine if kinds <= {SystemSampled, DeviceMemory} else news).append(now)
        events(worker, batch)

    monkeypatch.setattr(launcher, "pull", counted_pull)
    monkeypatch.setattr(process._Worker, "_events", noted_events)
    watch = QTimer()
    watch.timeout.connect(lambda: resting.append((time.perf_counter(), bridge.resting)))
    watch.start(50)
    assert window.open_script(str(path))
    assert run_to_end(qtbot, window) == ("finished", 0), window.console.text()[-2000:]
    watch.stop()
    assert step_points(window) == 20  # both fits' steps, the second after the quiet
    t0, t1 = (float(v) for v in window.console.text().split("quiet ")[1].split()[:2])
    assert launcher.quiet_pull_s == 0.5
    # it was asked while the steps came
    assert any(t < t0 for t in asks)
    # the worker's system samples came during the quiet (the test's premise)...
    last_news = max(a for a in news if a < t1)
    rest_from = last_news + 0.5 + 0.35  # (an ask is noted a little after it is decided)
    assert t1 - last_news > 1.5, "the test needs a while with no news from the run"
    assert [a for a in routine if rest_from < a < t1], "no system sample came in the quiet"
    # ... and they are not news: within the quiet, the window asks only while news came
    # less than quiet_pull_s before (the worker, asked once, beats every 0.25 s on its own)
    late = [t for t in asks if t0 < t < t1 and not any(0 <= t - a <= 0.85 for a in news)]
    assert late == [], f"{len(late)} asks long after the last news"
    # and the window rests through the quiet, samples or not
    looks = [r for t, r in resting if rest_from < t < t1]
    assert looks and all(looks), f"{looks.count(False)} of {len(looks)} looks not resting"


def test_bad_files_are_refused_in_the_window(window, tmp_path):
    (tmp_path / "notes.txt").write_text("not python")
    assert not window.open_script(str(tmp_path / "notes.txt"))
    assert not window.open_script(str(tmp_path / "missing.py"))
    assert "expected a .py file" in window.console.text()
    assert "No such file" in window.console.text()
    assert not window.launcher.is_running()


def test_no_fit_and_input_behave_in_the_window(qtbot, window, write_script):
    path = write_script("print('just data prep')\n")
    assert window.open_script(str(path))
    assert run_to_end(qtbot, window) == ("finished", 0)
    assert "no fit was monitored" in window.status.state_text() + window.console.text()
    asks = write_script("answer = input('epochs? ')\n", "asks.py")
    assert window.open_script(str(asks))
    assert run_to_end(qtbot, window) == ("failed", 1)
    assert "EOFError" in window.console.text() and "no terminal" in window.console.text()


def test_default_example_is_bundled():
    assert default_example().is_file()
