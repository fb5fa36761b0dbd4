"""Bridge: drains the channel at frame rate, in order, coalescing steps, dropping nothing."""

from __future__ import annotations

from tfstudio.core.channel import Channel
from tfstudio.core.events import (
    EVENT_TYPES,
    ConsoleOutput,
    EngineStatus,
    EpochEnded,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.ui.bridge import Bridge


class SpyPanel:
    EVENTS = EVENT_TYPES  # every kind

    def __init__(self, log):
        self.log = log

    def ingest_steps(self, steps):
        self.log.append(("steps", [s.global_step for s in steps]))

    def ingest_event(self, event):
        self.log.append(("event", type(event).__name__))

    def refresh(self):
        self.log.append(("refresh",))


def step(g):
    return StepEnded(0, g, 0, g, 1, {"loss": 1.0}, {"loss": 1.0}, g * 0.1)


def test_steps_are_coalesced_in_order_and_each_panel_refreshes_once(qtbot):
    channel = Channel()
    bridge = Bridge(channel)
    log = []
    bridge.add_panel(SpyPanel(log))
    for g in (1, 2, 3):
        channel.emit(step(g))
    channel.emit(ConsoleOutput("stdout", "x"))
    for g in (4, 5):
        channel.emit(step(g))
    channel.emit(EpochEnded(0, 0, 5, {"loss": 1.0}, 0.5))

    assert bridge.tick() == 7
    assert log == [
        ("steps", [1, 2, 3]),
        ("event", "ConsoleOutput"),
        ("steps", [4, 5]),
        ("event", "EpochEnded"),
        ("refresh",),
    ]
    assert bridge.events_consumed == 7 and bridge.steps_consumed == 5
    assert len(bridge.frame_times) == 1 and bridge.frame_times[0] > 0


def test_many_steps_are_never_dropped(qtbot):
    channel = Channel()
    bridge = Bridge(channel)
    seen = []

    class Counter(SpyPanel):
        def ingest_steps(self, steps):
            seen.extend(s.global_step for s in steps)

    bridge.add_panel(Counter([]))
    for g in range(1, 50_001):
        channel.emit(step(g))
    bridge.tick()
    assert seen == list(range(1, 50_001))
    assert channel.pending() == 0


def test_run_ended_is_signalled_after_the_panels_redrew(qtbot):
    channel = Channel()
    bridge = Bridge(channel)
    log = []
    bridge.add_panel(SpyPanel(log))
    bridge.run_ended.connect(lambda e: log.append(("run_ended", e.status)))
    channel.emit(step(1))
    channel.emit(RunEnded("finished", 0, 1, 1, 1.0))
    bridge.tick()
    assert log.index(("refresh",)) < log.index(("run_ended", "finished"))


def test_signals_for_run_and_engine_events(qtbot):
    channel = Channel()
    bridge = Bridge(channel)
    got = []
    bridge.run_started.connect(lambda e: got.append("started"))
    bridge.engine_status.connect(lambda e: got.append(e.state))
    channel.emit(EngineStatus("loading"))
    channel.emit(RunStarted("/x/t.py", ("t.py",), "/x", 0.0))
    channel.emit(EngineStatus("ready"))
    bridge.tick()
    assert got == ["loading", "started", "ready"]


def test_timer_drains_the_channel_by_itself(qtbot):
    channel = Channel()
    bridge = Bridge(channel, fps=60)
    assert 15 <= bridge.interval_ms() <= 17
    bridge.start()
    try:
        channel.emit(step(1))
        qtbot.waitUntil(lambda: bridge.events_consumed == 1, timeout=2000)
    finally:
        bridge.stop()
    assert not bridge.is_active()


class SlowPaintPanel(SpyPanel):
    """Reports paint time as the metrics panel does: 50 ms per paint after a refresh."""

    def __init__(self, log):
        super().__init__(log)
        self.paint_clock = [0.0]
        self._needs_paint = False
        self.paint_cost = 0.05

    def refresh(self):
        super().refresh()
        self._needs_paint = True

    def paint(self):
        """What Qt's event loop does between two ticks."""
        if self._needs_paint:
            self.paint_clock[0] += self.paint_cost
            self._needs_paint = False


def test_live_redraws_are_budgeted_but_no_event_waits(qtbot, monkeypatch):
    import tfstudio.ui.bridge as bridge_module

    clock = [1000.0]
    monkeypatch.setattr(bridge_module.time, "perf_counter", lambda: clock[0])
    channel = Channel()
    bridge = Bridge(channel)
    bridge.redraw_hz = bridge_module.FULL_REDRAW_HZ  # a machine with cores to spare
    log = []
    panel = SlowPaintPanel(log)
    bridge.add_panel(panel)
    channel.emit(RunStarted("/tmp/t.py", ("t.py",), "/tmp", 0.0))
    channel.emit(step(1))
    bridge.tick()
    panel.paint()
    assert log.count(("refresh",)) == 1
    # 50 ms of painting at a 50% budget: no redraw in the next two 33 ms frames
    for g in range(2, 4):
        clock[0] += 0.033
        channel.emit(step(g))
        bridge.tick()
        panel.paint()
    assert log.count(("refresh",)) == 1  # steps ingested every frame, drawing deferred
    assert [s for kind, *rest in log if kind == "steps" for s in rest[0]] == list(range(1, 4))
    clock[0] += 0.04
    bridge.tick()  # nothing new, but a redraw is due and pending
    assert log.count(("refresh",)) == 2
    assert bridge.redraw_times[0] >= 0.05
    # cheap paints (training is in another process): a redraw every 33 ms frame
    panel.paint_cost = 0.0
    for g in range(4, 10):
        clock[0] += 1 / 30 + 1e-6
        channel.emit(step(g))
        bridge.tick()
        panel.paint()
    assert log.count(("refresh",)) == 8
    # the end of a run is always drawn at once
    channel.emit(step(12))
    channel.emit(RunEnded("finished", 0, 1, 12, 1.0))
    bridge.tick()
    assert log.count(("refresh",)) == 9 and not bridge.live


def test_a_panel_gets_only_the_kinds_it_subscribed_to(qtbot):
    channel = Channel()
    bridge = Bridge(channel)
    everything, epochs_only = [], []

    class EpochPanel(SpyPanel):
        EVENTS = (EpochEnded,)

    bridge.add_panel(SpyPanel(everything))
    bridge.add_panel(EpochPanel(epochs_only))
    channel.emit(RunStarted("/tmp/t.py", ("t.py",), "/tmp", 0.0))
    channel.emit(step(1))
    channel.emit(ConsoleOutput("stdout", "x"))
    channel.emit(EpochEnded(0, 0, 1, {"loss": 1.0}, 0.5))
    channel.emit(step(2))
    bridge.tick()
    assert ("event", "ConsoleOutput") in everything and ("steps", [1]) in everything
    assert [e for e in epochs_only if e[0] != "refresh"] == [("event", "EpochEnded")]
    assert bridge.panels_for(EpochEnded) == bridge._routes[EpochEnded]
    assert len(bridge.panels_for(StepEnded)) == 1


def test_every_window_panel_subscribes_to_each_kind_its_ingest_event_names():
    """A kind handled in ingest_event but missing from EVENTS would never arrive."""
    import inspect
    import re

    from tfstudio.ui.panels import (
        checkpoints,
        console,
        control,
        inspector,
        metrics,
        notices,
        runs,
        status,
        system,
    )

    names = {t.__name__ for t in EVENT_TYPES}
    modules = (checkpoints, console, control, inspector, metrics, notices, runs, status, system)
    for module in modules:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or "ingest_event" not in vars(cls):
                continue
            source = inspect.getsource(cls.ingest_event)
            named = set(re.findall(r"\b([A-Z][A-Za-z]+)\b", source)) & names
            declared = {t.__name__ for t in cls.EVENTS}
            assert named <= declared, f"{cls.__name__} handles {named - declared} unsubscribed"
            assert set(cls.EVENTS) <= set(EVENT_TYPES)


def test_a_busy_machine_gets_the_low_redraw_rate_and_no_event_waits(qtbot, monkeypatch):
    import tfstudio.ui.bridge as bridge_module

    clock = [1000.0]
    monkeypatch.setattr(bridge_module.time, "perf_counter", lambda: clock[0])
    channel = Channel()
    bridge = Bridge(channel)
    log = []
    bridge.add_panel(SpyPanel(log))
    bridge.set_redraw_hz(bridge_module.LOW_REDRAW_HZ)  # training leaves no core for painting
    assert bridge.interval_ms() == round(1000 / 30)  # no run yet: every frame
    channel.emit(RunStarted("/tmp/t.py", ("t.py",), "/tmp", 0.0))
    bridge.tick()
    low = round(1000 / bridge_module.LOW_REDRAW_HZ)
    assert bridge.interval_ms() == low  # live: a tick per redraw, none in between
    for g in range(1, 13):
        clock[0] += low / 1000
        channel.emit(step(g))
        bridge.tick()
    assert log.count(("refresh",)) == 13  # every tick draws (the first one included)
    assert [s for kind, *rest in log if kind == "steps" for s in rest[0]] == list(range(1, 13))
    bridge.set_redraw_hz(bridge_module.FULL_REDRAW_HZ)  # the machine has a core to spare again
    assert bridge.interval_ms() == round(1000 / 30)
    channel.emit(RunEnded("finished", 0, 1, 12, 1.0))
    bridge.tick()
    assert bridge.interval_ms() == round(1000 / 30)


def test_an_idle_window_ticks_slowly_until_something_comes(qtbot):
    import tfstudio.ui.bridge as bridge_module

    channel = Channel()
    bridge = Bridge(channel)
    frame_ms = bridge.interval_ms()
    assert frame_ms == round(1000 / bridge_module.DEFAULT_FPS)
    bridge.start()
    try:
        # no run, nothing on the channel: after IDLE_REST_S the bridge rests
        qtbot.waitUntil(lambda: bridge.resting, timeout=int(3000 * bridge_module.IDLE_REST_S))
        assert bridge.interval_ms() == round(1000 * bridge_module.QUIET_TICK_S)
        # something comes (a run's first events): drained at the next slow tick, and the
        # frame rate is back
        channel.emit(RunStarted("/tmp/t.py", ("t.py",), "/tmp", 0.0))
        qtbot.waitUntil(lambda: bridge.live, timeout=1000)
        assert not bridge.resting and bridge.interval_ms() <= frame_ms * 3
        channel.emit(RunEnded("finished", 0, 1, 0, 1.0))
        qtbot.waitUntil(lambda: not bridge.live, timeout=1000)
        assert bridge.interval_ms() == frame_ms and not bridge.resting
        # events with no run: drained, and no rest while they keep coming
        qtbot.waitUntil(lambda: bridge.resting, timeout=int(3000 * bridge_module.IDLE_REST_S))
        channel.emit(step(1))
        qtbot.waitUntil(lambda: not bridge.resting, timeout=1000)
        assert bridge.interval_ms() == frame_ms
    finally:
        bridge.stop()


class BrokenPanel(SpyPanel):
    """A panel with a bug: its refresh and its step ingest raise."""

    def ingest_steps(self, steps):
        raise ValueError("a bug in ingest_steps")

    def refresh(self):
        raise RuntimeError("a bug in refresh")


def test_a_panel_that_raises_leaves_the_others_and_the_runs_end_alone(qtbot, capfd):
    channel = Channel()
    bridge = Bridge(channel)
    log = []
    bridge.add_panel(BrokenPanel([]))
    bridge.add_panel(SpyPanel(log))
    ended, errors = [], []
    bridge.run_ended.connect(ended.append)
    bridge.monitor_error.connect(errors.append)
    channel.emit(RunStarted("/tmp/train.py", ("/tmp/train.py",), "/tmp", 0.0))
    for g in (1, 2, 3):
        channel.emit(step(g))
    bridge.tick()
    for g in (4, 5):
        channel.emit(step(g))
    channel.emit(RunEnded("finished", 0, 1, 5, 0.5))
    bridge.tick()

    # the panel after the broken one got every event and every redraw
    assert ("steps", [1, 2, 3]) in log and ("steps", [4, 5]) in log
    assert ("event", "RunEnded") in log and log.count(("refresh",)) >= 2
    assert len(ended) == 1  # the run's end was heard
    # each failure said once (refresh failed at every redraw), where and what
    assert sorted(e.headline().split(":")[0] for e in errors) == [
        "Window error in BrokenPanel.ingest_steps",
        "Window error in BrokenPanel.refresh",
    ]
    assert all(e.window for e in errors)
    assert "RuntimeError: a bug in refresh" in {e.message for e in errors}
    assert log.count(("event", "MonitorError")) == 2  # in the console
    assert "BrokenPanel.refresh failed" in capfd.readouterr().err
