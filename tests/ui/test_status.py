"""Status bar: state, epoch, step, rate, ETA, loss, progress."""

from __future__ import annotations

from tfstudio.core.events import CheckpointRestored, RunState


def test_progress_texts_during_a_fit(window, run):
    run.started().fit(epochs=5, steps_per_epoch=100)
    run.steps(100, epoch=0, dt=0.01).epoch_end(0, loss=0.5)
    run.steps(20, epoch=1, dt=0.01).frame()
    status = window.status
    assert status.epoch_label.text() == "epoch 2/5"
    assert status.step_label.text() == "step 20/100"
    assert status.rate_label.text() == "100 steps/s"
    # 3 epochs * 100 + 80 steps left at 100 steps/s: 3.8 s
    assert status.eta_label.text() == "ETA 0:04"
    assert status.loss_label.text() == "loss 0.008333"  # 1/120: the newest step's own loss
    assert status.progress_bar.value() == 24  # 120 of 500 steps
    assert status.progress_bar.format() == "24%"
    # set with updates off (no repaint of its own), then painted with the rest
    assert status.progress_bar.updatesEnabled()
    assert status.state_text() == "running"


def test_a_failed_run_drops_its_eta_a_finished_one_shows_nothing_left(window, run):
    run.started().fit(epochs=4, steps_per_epoch=100)
    run.steps(100, epoch=0, dt=0.01).epoch_end(0, loss=0.5).steps(60, epoch=1, dt=0.01).frame()
    assert window.status.eta_label.text() == "ETA 0:02"  # 240 steps left at 100 steps/s
    run.ended("failed", exit_code=1).frame()
    assert window.status.eta_label.text() == ""  # not the last estimate of a run that failed
    run.started().fit(epochs=1, steps_per_epoch=100)
    run.steps(100, epoch=0, dt=0.01).fit_end().ended().frame()
    assert window.status.eta_label.text() == "ETA 0:00"


def test_every_n_steps_note(window, run):
    run.started().fit(epochs=1, steps_per_epoch=64, spe=8).steps(2).frame()
    assert window.status.step_label.text() == "step 16/64 (every 8 steps)"


def test_unknown_epoch_length(window, run):
    run.started().fit(epochs=2, steps_per_epoch=None).steps(7).frame()
    assert window.status.step_label.text() == "step 7"
    assert window.status.eta_label.text() == "ETA --"
    assert not window.status.progress_bar.isVisibleTo(window.status)  # no empty bar
    run.fit(epochs=2, steps_per_epoch=10).steps(5).frame()  # a fit of known length
    assert window.status.progress_bar.isVisibleTo(window.status)


def test_loading_tensorflow_keeps_run_enabled(window, run, script):
    assert window.open_script(str(script))
    run.engine("loading", "importing tensorflow").frame()
    assert window.status.state_text() == "loading TensorFlow…"
    assert window.run_action.isEnabled()
    run.engine("ready").frame()
    assert window.status.state_text() == "ready"


def test_loading_shown_while_a_started_run_waits_for_the_import(window, run, script):
    run.engine("loading").frame()
    window.open_script(str(script))
    assert window.run_script()
    assert window.status.state_text() == "loading TensorFlow…"
    run.engine("ready").frame()  # the fake launcher's RunStarted is processed too
    assert window.status.state_text() == "running"


def test_failed_run_shows_error_and_file_line(window, run, script_error):
    err = script_error("/proj/train.py", 12)
    run.started().fit().steps(3).ended("failed", 1, error=err).frame()
    text = window.status.state_text()
    assert text.startswith("failed")
    assert "ZeroDivisionError" in text and "train.py:12" in text


def test_finished_without_fit(window, run):
    run.started().ended("finished", 0, fits=0).frame()
    assert window.status.state_text() == "finished — no fit was monitored"


def test_finished_and_stopped(window, run):
    run.started().fit().steps(10).fit_end().ended("finished", 0).frame()
    assert window.status.state_text().startswith("finished — 10 steps")
    run.started().fit().steps(1).fit_end(stopped=True).ended("stopped", 0).frame()
    assert window.status.state_text().startswith("stopped")


def test_pause_restore_resume_shows_paused_then_a_fresh_rate(window, run):
    """A restore to an earlier step never gives a negative rate, nor counts the paused time."""
    run.started().fit(epochs=5, steps_per_epoch=1000)
    run.steps(300, epoch=0, dt=0.01).frame()
    status = window.status
    assert status.rate_label.text() == "100 steps/s"
    run.emit(RunState("paused", 300)).frame()
    assert status.rate_label.text() == "paused at step 300"
    assert status.eta_label.text() == "ETA --"
    run.time += 60.0  # a minute paused
    run.emit(CheckpointRestored("/tmp/ckpt/ckpt-1", 120, 120)).frame()
    assert status.rate_label.text() == "paused at step 120"
    run.emit(RunState("running", 120)).frame()
    run.global_step = 120
    run.time += 5.0  # the first step after the resume carries the wait
    run.steps(1, epoch=0, dt=0.0, start=120).frame()
    assert "paused" not in status.rate_label.text()
    assert "-" not in status.rate_label.text().replace("--", "")
    run.steps(150, epoch=0, dt=0.02, start=121).frame()
    assert status.rate_label.text() == "50 steps/s"  # only the steps after the resume
    assert status.eta_label.text().startswith("ETA ")
    assert status.eta_label.text() != "ETA --"


def test_a_step_after_a_pause_clears_it_even_if_the_resume_event_is_missed(window, run):
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(50, dt=0.01)
    run.emit(RunState("paused", 50)).frame()
    assert window.status.rate_label.text() == "paused at step 50"
    run.time += 30.0
    run.steps(50, dt=0.01, start=50).frame()
    assert window.status.rate_label.text() == "100 steps/s"


def test_a_run_stopped_while_paused_says_stopped_not_paused(window, run):
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(50, dt=0.01)
    run.emit(RunState("paused", 50)).frame()
    assert window.status.rate_label.text() == "paused at step 50"
    run.fit_end(stopped=True).ended("stopped", 130).frame()
    assert window.status.state_text().startswith("stopped")
    assert "paused" not in window.status.summary()


def test_a_new_step_count_does_not_lay_the_window_out_again(window, run, qtbot):
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    window.system.interval_s = 3600.0  # the System view's one sample, taken before counting
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(100).frame()
    qtbot.waitUntil(lambda: len(window.system.samples) == 1, timeout=3000)
    qtbot.wait(100)  # the first texts' room asked for once (the bar's, the window's after)
    requests = []

    class Counter(QObject):
        def eventFilter(self, watched, event):  # noqa: N802 (Qt API)
            if event.type() == QEvent.Type.LayoutRequest:
                requests.append(type(watched).__name__)
            return False

    counter = Counter()
    for watched in (window, window.statusBar()):
        watched.installEventFilter(counter)
    for start in range(100, 190, 10):  # step 110/1000 ... 190/1000: new texts, same room
        run.steps(10, start=start).frame()
        QApplication.processEvents()
    assert window.status.step_label.text() == "step 190/1000"
    # at most once (a text that needed more room than any before it: the bar, then the
    # window); before, each new count re-laid-out the status bar and the window
    assert requests in ([], ["QStatusBar", "MainWindow"])
    bar = window.statusBar().geometry()
    assert window.status.state_label.geometry().right() <= bar.width()


def test_short_of_room_the_texts_give_way_never_the_state(window, run):
    from tfstudio.ui.panels.status import MIN_LABEL_W

    run.started().fit(epochs=5, steps_per_epoch=100).steps(20, dt=0.01).frame()
    status = window.status
    wide = status.minimumSizeHint().width()
    status.resize(wide, status.height())
    state = status.state_label.geometry()
    assert state.right() < status.width()  # whole, at the right end
    assert state.width() >= status.state_label.sizeHint().width()
    for label in (status.epoch_label, status.step_label, status.loss_label):
        assert MIN_LABEL_W <= label.width() < label.sizeHint().width()  # clipped
    status.resize(wide + 600, status.height())
    assert status.step_label.width() >= status.step_label.sizeHint().width()
    assert status.state_label.geometry().right() > wide  # room to spare goes to the texts
