"""Series and loops: how a run's custom-loop steps are grouped.

A *series* is keyed by the variables its steps update (a GAN's discriminator and generator
are two) and where the script runs them: an eager step's script line, a traced step's
``tf.function`` Python function (a retrace is the same loop). A series that appears before
its loop's first series has done two steps joins that loop, a later one starts the next
*loop* (a segment of the run). A series whose steps come again after its loop ended goes
on in a new loop, counted from its first step there.
"""

from __future__ import annotations

from typing import Any

from tfstudio.engine.loop_inspect import LoopSampling
from tfstudio.engine.loops.ring import GraphRing


class Series:
    """The steps that update one set of variables: the values of those not yet reported
    (eager: added as they happen; graph: read from its device ring buffer)."""

    def __init__(
        self,
        key: frozenset[int],
        name: str,
        variables: list[Any],
        small_labels: list[str],
        site: tuple[Any, ...] = ("eager",),
    ) -> None:
        self.key = key
        # where the script runs its steps: ("eager", code, line) or ("graph", code)
        self.site = site
        self.name = name
        self.variables = variables
        self.small_labels = small_labels  # the value lines of tiny scalar variables (eager)
        self.optimizer: Any = None  # the Keras optimizer that updates them (if any)
        self.loop: Loop | None = None
        self.loss_key = "loss"
        self.norm_key = "gradient norm"
        self.ring: GraphRing | None = None  # graph: the device buffer of its steps
        self.norm_sampled = False  # graph: only twins write its norm (not every step's graph)
        self.grads: Any = None  # graph: the inspector's device buffers (loop_inspect)
        self.tree: Any = None  # the inspector's (ModelNode, summary text) of the owner
        # graph: (a step of its loop, its loss) read NaN or Inf, for the NaN guard
        self.non_finite: tuple[int, float] | None = None
        # step numbers: the series' own (graph: its ring's counter); its loop's from _origin
        self._count = 0  # steps seen so far
        # steps _base.._count-1: (loss, global gradient norm, eager: tiny variables' values)
        self._rows: list[tuple[float, float, tuple[float, ...]]] = []
        self._base = 0
        self._origin = 0

    def rebase(self) -> None:
        """The series goes on in a new loop: its steps count from 0 again there."""
        self._origin = self._base = self._count
        self._rows = []

    def graph_ring(self) -> GraphRing:
        """The device buffer this series' traced steps write (made at the first)."""
        if self.ring is None:
            self.ring = GraphRing()
            self.norm_sampled = True
        return self.ring

    def norm_name(self, name: str) -> str:
        """``gradient norm (generator)``, or ``gradient norm (generator, sampled)``."""
        if not self.norm_sampled:
            return name
        return f"{name[:-1]}, sampled)" if name.endswith(")") else f"{name} (sampled)"

    def add(self, loss: float, norm: float, small: tuple[float, ...] | None) -> None:
        """An eager step's loss, global gradient norm (and tiny variables' values)."""
        self._rows.append((loss, norm, small or ()))
        self._count += 1

    def snapshot(self) -> int:
        """Steps of its loop that exist now (graph: read from the device buffer)."""
        if self.ring is not None:
            count, losses, norms, bad = self.ring.read(self._count)
            if bad is not None and self.non_finite is None:
                self.non_finite = (bad - self._origin, losses[bad - self._count])
            if count > self._count:
                self._rows.extend(zip(losses, norms, [()] * len(losses), strict=True))
                self._count = count
        return self._count - self._origin

    def written(self) -> int:
        """Steps of its loop that exist now (graph: its ring's counter alone)."""
        count = self.ring.written() if self.ring is not None else self._count
        return count - self._origin

    def trim(self, emitted: int) -> None:
        """Forget the values of its loop's first ``emitted`` steps (reported)."""
        emitted += self._origin
        if emitted > self._base:
            del self._rows[: emitted - self._base]
            self._base = emitted

    def rows(self, first: int, last: int) -> list[tuple[float, float, tuple[float, ...]]]:
        """(loss, gradient norm, tiny variables' values) of its loop's steps ``first..last-1``."""
        i = first + self._origin - self._base
        return self._rows[i : i + last - first]


class Loop:
    """One discovered custom loop: a segment of the run."""

    def __init__(self, number: int, fit_index: int, sampling: LoopSampling | None = None) -> None:
        self.number = number
        self.fit_index = fit_index
        self.series: list[Series] = []
        self.emitted = 0
        # the loop step its Keras metrics were last sent with: samples go at least two
        # steps apart, so views take them for a sampled line (see RunStore._cut_gaps)
        self.metrics_step = -2
        self.announced = False
        self.ended = False
        self.start_step = 0
        # the script's output mark at its first step: where viewers put its line among the output
        self.output: tuple[int, int] | None = None
        self.read_at: float | None = None  # run time of the last read of its steps
        # graph: (its step, its Keras metrics) read by the training thread right after that
        # step, for the reader to report with it
        self.running_at: tuple[int, dict[str, float]] | None = None
        self.sampling = sampling or LoopSampling()  # its cadence (engine/loop_inspect.py)

    def is_graph(self) -> bool:
        """Whether any of its series runs inside a ``tf.function``."""
        return any(s.ring is not None for s in self.series)


class LoopBook:
    """The run's series (by the variables they update and where they run) and loops, in order."""

    def __init__(self) -> None:
        self.series: dict[tuple[frozenset[int], Any], Series] = {}
        self.loops: list[Loop] = []

    def current(self) -> Loop | None:
        return self.loops[-1] if self.loops else None

    def joins_current(
        self, key: frozenset[int] | None = None, site: tuple[Any, ...] | None = None
    ) -> bool:
        """Whether a series of ``key``'s variables run at ``site`` joins the current loop: while
        its first series has done at most one step (a GAN's generator step follows the
        discriminator's first), with other variables, run as its series are (eagerly, or
        traced: one eager step, then a ``tf.function`` loop of it, are two loops)."""
        loop = self.current()
        if loop is None or loop.ended or loop.announced:
            return False
        if loop.series and loop.series[0].snapshot() > 1:
            return False
        if key is None or site is None:
            return True
        return all(not (s.key & key) and s.site[0] == site[0] for s in loop.series)

    def new_loop(self, fit_index: int, sampling: LoopSampling | None = None) -> Loop:
        """Start the next loop (numbered from 1)."""
        loop = Loop(len(self.loops) + 1, fit_index, sampling)
        self.loops.append(loop)
        return loop

    def add(self, series: Series, loop: Loop) -> None:
        self.series[(series.key, series.site)] = series
        loop.series.append(series)
        series.loop = loop

    def find(self, key: frozenset[int], site: tuple[Any, ...]) -> Series | None:
        """The series of ``key``'s variables run at ``site``, else a young current loop's series
        of them run elsewhere (a step alternating two lines is one series), or None."""
        series = self.series.get((key, site))
        if series is not None:
            return series
        if self.joins_current():
            loop = self.current()
            assert loop is not None
            for s in loop.series:
                if s.key == key and s.site[0] == site[0]:  # both eager, or both traced
                    self.series[(key, site)] = s
                    return s
        return None

    def reopen(self, loop: Loop, fit_index: int, sampling: LoopSampling | None = None) -> Loop:
        """Start the next loop with ``loop``'s series (it ended; its steps came again)."""
        again = self.new_loop(fit_index, sampling)
        for s in loop.series:
            s.rebase()
            s.loop = again
            again.series.append(s)
        return again

    def open_graph_loops(self) -> list[Loop]:
        return [lp for lp in self.loops if not lp.ended and lp.is_graph()]
