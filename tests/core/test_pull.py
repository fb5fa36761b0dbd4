"""The worker's pump beats when the viewer asks (a pull), and at a slow pace when it does not."""

from __future__ import annotations

import time
from multiprocessing import Pipe

from tfstudio import worker
from tfstudio.core.channel import Channel
from tfstudio.core.events import ConsoleOutput, DeviceMemory, StepColumns
from tfstudio.core.process import ProcessLauncher


def _steps(received: list[object]) -> list[int]:
    return [int(g) for e in received if type(e) is StepColumns for g in e.global_step]


def _pump(monkeypatch, interval: float, fallback: float):
    monkeypatch.setattr(worker, "PULL_FALLBACK_S", fallback)
    viewer, conn = Pipe(duplex=True)
    channel = Channel()
    pump = worker.WorkerPump(conn, channel, on_stop=lambda: None)
    pump.interval = interval
    pump.start()
    return viewer, channel, pump


def test_a_pull_hands_the_batch_on_at_once_and_then_the_pump_waits_to_be_asked(monkeypatch):
    viewer, channel, pump = _pump(monkeypatch, interval=30.0, fallback=30.0)
    try:
        channel.step(0, 1, 0, 1, 1, {"loss": 1.0}, {}, 0.01)
        assert not viewer.poll(0.3)  # the pump's own beat is 30 s away
        viewer.send(("beat",))
        assert viewer.poll(10.0)
        kind, payload = viewer.recv()
        assert kind == "events" and _steps(payload) == [1]
        assert pump.pulled
        # Asked once: the next steps wait for the next pull (its fallback is 30 s here).
        channel.step(0, 2, 0, 2, 1, {"loss": 0.5}, {}, 0.02)
        channel.step(0, 3, 0, 3, 1, {"loss": 0.25}, {}, 0.03)
        assert not viewer.poll(0.3)
        viewer.send(("beat",))
        assert viewer.poll(10.0)
        assert _steps(viewer.recv()[1]) == [2, 3]
    finally:
        started = time.monotonic()
        pump.close()
        closed_in = time.monotonic() - started
    # close() ends the pump's wait at once: it does not sit out the 30 s fallback (nor
    # Pump.close's 5 s join) before handing on the last events
    assert not pump.is_alive() and closed_in < 4.0


def test_a_viewer_that_stops_asking_still_gets_its_batches_at_the_fallback_pace(monkeypatch):
    viewer, channel, pump = _pump(monkeypatch, interval=30.0, fallback=0.1)
    try:
        viewer.send(("beat",))  # the viewer pulls once, then never again (a busy window)
        channel.emit(ConsoleOutput("stdout", "hello\n"))
        assert viewer.poll(10.0)
        got = viewer.recv()[1]
        for g in range(1, 4):
            channel.step(0, g, 0, g, 1, {"loss": 1.0 / g}, {}, 0.01 * g)
        while not _steps(got):  # no pull: the fallback beat (0.1 s) sends them
            assert viewer.poll(10.0), "the steps never came without a pull"
            got = viewer.recv()[1]
        assert _steps(got) == [1, 2, 3]
    finally:
        pump.close()


def test_a_viewer_that_never_asks_gets_a_batch_every_interval(monkeypatch):
    viewer, channel, pump = _pump(monkeypatch, interval=0.05, fallback=30.0)
    try:
        channel.step(0, 1, 0, 1, 1, {"loss": 1.0}, {}, 0.01)
        assert viewer.poll(10.0)  # not pulled: the pump's own 50 ms beat
        assert _steps(viewer.recv()[1]) == [1]
        assert not pump.pulled
    finally:
        pump.close()


def test_the_launcher_asks_only_a_run_under_way():
    launcher = ProcessLauncher(Channel(), keep_spare=False, warm=False)
    try:
        assert launcher.pull() is False  # no run: nothing is sent anywhere
        assert launcher.last_arrival == 0.0
    finally:
        launcher.shutdown()


class _StandInWorker:
    """What ``ProcessLauncher.pull`` and ``send`` look at in a worker: its messages kept."""

    def __init__(self) -> None:
        self.run_seen = True
        self.ended = None
        self.pulled = False
        self.sent: list[tuple] = []

    def send(self, message: tuple) -> bool:
        self.sent.append(message)
        return True


def test_the_launcher_stops_asking_a_quiet_run_until_a_batch_or_a_command_comes(monkeypatch):
    from tfstudio.core.commands import Pause

    launcher = ProcessLauncher(Channel(), keep_spare=False, warm=False)
    stand_in = _StandInWorker()
    monkeypatch.setattr(launcher, "current", stand_in)
    beats = lambda: sum(m == ("beat",) for m in stand_in.sent)  # noqa: E731
    try:
        # The first ask always goes: it puts the worker on its slow beat of its own.
        assert not launcher.quiet()  # never asked: not quiet (the first ask must go)
        assert launcher.pull() is True and beats() == 1 and stand_in.pulled
        # Nothing came for longer than quiet_pull_s: no more asks (its beat brings the next).
        launcher.last_news = time.perf_counter() - 2 * launcher.quiet_pull_s
        assert launcher.pull() is False and beats() == 1
        # A batch came: asked again before each redraw.
        launcher.last_news = time.perf_counter()
        assert launcher.pull() is True and beats() == 2
        # Quiet again, then the user presses a button: its answer is asked for at once,
        # and the window (a listener) hears of it on the spot.
        woken: list[bool] = []
        launcher.command_listeners.append(lambda: woken.append(launcher.quiet()))
        launcher.last_news = time.perf_counter() - 2 * launcher.quiet_pull_s
        assert launcher.quiet() and launcher.pull() is False
        launcher.send(Pause())
        assert ("command", Pause()) in stand_in.sent
        assert woken == [False]  # told after the command went: no longer quiet
        assert launcher.pull() is True and beats() == 3
        # quiet_pull_s None: it always asks, as before.
        launcher.commanded_at = 0.0
        monkeypatch.setattr(launcher, "quiet_pull_s", None)
        assert launcher.pull() is True and beats() == 4
    finally:
        monkeypatch.setattr(launcher, "current", None)
        launcher.shutdown()


def test_a_run_that_sends_only_its_memory_figures_stays_quiet(monkeypatch):
    """On a GPU the worker sends TensorFlow's memory figures every second, steps or not:
    a paused run must not be asked half the time because of them."""
    launcher = ProcessLauncher(Channel(), keep_spare=False, warm=False)
    stand_in = _StandInWorker()
    monkeypatch.setattr(launcher, "current", stand_in)
    beats = lambda: sum(m == ("beat",) for m in stand_in.sent)  # noqa: E731
    memory = DeviceMemory(3.0, ("GPU:0",), (1 << 30,), (2 << 30,))
    try:
        assert launcher.pull() is True and beats() == 1  # the first ask always goes
        launcher.last_news = time.perf_counter() - 2 * launcher.quiet_pull_s
        launcher.note_batch([memory])  # a quiet run's routine figures arrive
        # the batch is noted as an arrival (pull answers are timed by it) ...
        assert launcher.last_arrival > launcher.last_news
        # ... but the run is still quiet: not asked
        assert launcher.pull() is False and beats() == 1
        # anything else in a batch (here a print) is news: the asks start again
        launcher.note_batch([memory, ConsoleOutput("stdout", "epoch 2\n")])
        assert launcher.pull() is True and beats() == 2
    finally:
        monkeypatch.setattr(launcher, "current", None)
        launcher.shutdown()
