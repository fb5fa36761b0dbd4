"""The bridge pulls a live run's batch a little before each tick that redraws."""

from __future__ import annotations

import statistics
import threading
import time

import tfstudio.ui.bridge as bridge_module
from tfstudio.core.channel import Channel
from tfstudio.core.events import RunEnded, RunStarted, StepEnded
from tfstudio.ui.bridge import Bridge, Puller

ANSWER_S = 0.008  # the stand-in worker's round trip


class FakeWorker:
    """Answers each pull after ANSWER_S with one step, from another thread (as the
    launcher's reader thread puts a worker's batch on the channel)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.last_arrival = 0.0
        self.pulls: list[float] = []
        self.arrived: dict[int, float] = {}  # step -> when it reached the channel
        self.redraws_at_pull: dict[int, int] = {}  # step -> redraws done when it was asked for
        self.redraws = lambda: 0
        self.running = False

    def pull(self) -> bool:
        if not self.running:
            return False
        self.pulls.append(time.perf_counter())
        g = len(self.pulls)
        self.redraws_at_pull[g] = self.redraws()
        threading.Timer(ANSWER_S, self._answer, (g,)).start()
        return True

    def _answer(self, g: int) -> None:
        self.channel.emit(StepEnded(0, g, 0, g, 1, {"loss": 1.0 / g}, {}, g * 0.01))
        self.arrived[g] = self.last_arrival = time.perf_counter()


class ShownPanel:
    EVENTS = (StepEnded,)

    def __init__(self) -> None:
        self.newest = 0
        self.shown: dict[int, float] = {}  # step -> when a redraw first held it
        self.shown_at: dict[int, int] = {}  # step -> the redraw that first held it
        self.redraws = 0

    def ingest_steps(self, steps):
        self.newest = max(self.newest, max(s.global_step for s in steps))

    def ingest_event(self, event):
        pass

    def refresh(self):
        now = time.perf_counter()
        self.redraws += 1
        for g in range(1, self.newest + 1):
            self.shown.setdefault(g, now)
            self.shown_at.setdefault(g, self.redraws)


def test_a_live_run_is_pulled_before_each_redraw_and_shown_at_the_next_tick(qtbot):
    channel = Channel()
    bridge = Bridge(channel)
    bridge.set_redraw_hz(bridge_module.LOW_REDRAW_HZ)  # 2 cores: a tick every ~71 ms
    fake = FakeWorker(channel)
    assert isinstance(fake, Puller)
    bridge.puller = fake
    panel = ShownPanel()
    fake.redraws = lambda: panel.redraws
    bridge.add_panel(panel)
    bridge.start()
    try:
        qtbot.wait(300)
        assert fake.pulls == [] and bridge.pulls == 0  # no run yet: nothing asked
        fake.running = True
        channel.emit(RunStarted("/tmp/t.py", ("t.py",), "/tmp", 0.0))
        qtbot.waitUntil(lambda: len(fake.pulls) >= 16, timeout=10_000)
        tick = bridge.interval_ms() / 1000
        # a step a pull asked for is on screen at the redraw right after the ask, not a
        # tick later: it came in the lead before that redraw (counted in redraws, not time)
        qtbot.waitUntil(lambda: len(panel.shown_at) >= 15, timeout=5000)
        late = [
            panel.shown_at[g] - fake.redraws_at_pull[g]
            for g in fake.redraws_at_pull
            if g in panel.shown_at
        ]
        assert statistics.median(late) == 1
        # one pull per redraw (no beat asked for a tick that only drains); a loaded
        # machine (the suite on 2 cores) may run a late tick's pull before a redraw
        # that Qt then merges: a few in 16, not one pull per tick twice over
        assert abs(bridge.pulls - bridge.redraws) <= max(2, bridge.redraws // 4)
        # the lead was learned from the round trips: about the stand-in's 8 ms
        assert len(bridge.round_trips) >= 8
        assert ANSWER_S <= bridge.pull_lead() <= tick / 2
        channel.emit(RunEnded("finished", 0, 1, len(fake.pulls), 1.0))
        qtbot.waitUntil(lambda: not bridge.live, timeout=2000)
        asked = len(fake.pulls)
        qtbot.wait(300)
        assert len(fake.pulls) == asked  # the run is over: no more pulls
    finally:
        bridge.stop()


def test_the_pull_lead_follows_the_round_trips_within_its_bounds(qtbot):
    bridge = Bridge(Channel())
    bridge.set_redraw_hz(bridge_module.LOW_REDRAW_HZ)
    bridge.live = True
    bridge._retime()  # a live tick: ~71 ms
    assert bridge.pull_lead() == bridge_module.PULL_LEAD_S  # nothing measured yet
    bridge.round_trips.extend([0.002] * 12 + [0.010] * 4)  # 80th percentile: 10 ms
    assert abs(bridge.pull_lead() - (0.010 + bridge_module.PULL_MARGIN_S)) < 1e-9
    bridge.round_trips.extend([0.0001] * 16)  # a quick worker: never below the minimum
    assert bridge.pull_lead() == bridge_module.MIN_PULL_LEAD_S
    bridge.round_trips.extend([0.5] * 16)  # a slow one: at most half a tick
    assert bridge.pull_lead() == bridge.interval_ms() / 2000


class QuietWorker(FakeWorker):
    """A stand-in worker whose run can go quiet (``quiet()``, as ProcessLauncher.quiet)."""

    def __init__(self, channel: Channel) -> None:
        super().__init__(channel)
        self.is_quiet = False

    def quiet(self) -> bool:
        return self.is_quiet

    def pull(self) -> bool:
        return False if self.is_quiet else super().pull()


def test_a_quiet_run_is_neither_asked_nor_ticked_for_at_the_redraw_rate(qtbot):
    channel = Channel()
    bridge = Bridge(channel)
    bridge.set_redraw_hz(bridge_module.FULL_REDRAW_HZ)  # an idle machine: 30 ticks a second
    fake = QuietWorker(channel)
    bridge.puller = fake
    panel = ShownPanel()
    bridge.add_panel(panel)
    bridge.start()
    try:
        fake.running = True
        channel.emit(RunStarted("/tmp/t.py", ("t.py",), "/tmp", 0.0))
        qtbot.waitUntil(lambda: len(fake.pulls) >= 5, timeout=10_000)
        live_ms = bridge.interval_ms()
        assert live_ms < 1000 * bridge_module.QUIET_TICK_S and not bridge.resting
        # the run goes quiet: the bridge rests (slow ticks, no pull planned)
        fake.is_quiet = True
        qtbot.waitUntil(lambda: bridge.resting, timeout=2000)
        assert bridge.interval_ms() == round(1000 * bridge_module.QUIET_TICK_S)
        frames, asked = bridge.frames, bridge.pulls
        qtbot.wait(500)
        assert bridge.pulls == asked and not bridge._pull_timer.isActive()
        # what the run's own beat brings is still drained and drawn, at the slow pace
        channel.emit(StepEnded(0, 99, 0, 99, 1, {"loss": 0.5}, {}, 0.99))
        qtbot.waitUntil(lambda: 99 in panel.shown, timeout=2000)
        assert bridge.frames - frames <= 1 + 0.6 / bridge_module.QUIET_TICK_S
        # a command went to the run: back to the live pace at once, asks again
        fake.is_quiet = False
        bridge.wake()
        assert not bridge.resting and bridge.interval_ms() == live_ms
        assert bridge._pull_timer.isActive()  # the ask for the next tick is planned at once
        qtbot.waitUntil(lambda: bridge.pulls > asked, timeout=2000)
        # the run's end: no rest left over for the next run
        fake.is_quiet = True
        qtbot.waitUntil(lambda: bridge.resting, timeout=2000)
        channel.emit(RunEnded("finished", 0, 1, len(fake.pulls), 1.0))
        qtbot.waitUntil(lambda: not bridge.live, timeout=2000)
        assert not bridge.resting
    finally:
        bridge.stop()
