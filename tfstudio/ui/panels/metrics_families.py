"""The metrics panel's families (which plots are shown, remembered per script), its
fits (spans, the sidebar's rows, jump and isolate) and its settings: a part of
:class:`~tfstudio.ui.panels.metrics.MetricsPanel` kept apart so each module has one job.
"""

from __future__ import annotations

import hashlib
import math

from PySide6.QtCore import QSettings

from tfstudio.core.events import FitStarted
from tfstudio.core.run_store import LR_KEY
from tfstudio.core.x_axes import AXES, STEP_AXES, x_map
from tfstudio.ui.panels.metric_plot import GLOBAL, PER_FIT, FitSpan
from tfstudio.ui.panels.metrics_sidebar import SIDEBAR_WIDTH
from tfstudio.ui.plotting import Segment, segment_colour
from tfstudio.ui.plotting.smoothing import DEFAULT_WEIGHT
from tfstudio.ui.plotting.style import LIVE_COLOUR

MANY_FAMILIES = 4  # more families than this: only loss and the first metric shown by default
SETTINGS_GROUP = "metrics"


class FamiliesAndFits:
    """The families and fits of :class:`MetricsPanel` (a mixin: it uses the panel's plots,
    store, sidebar and settings)."""

    # -- fits ----------------------------------------------------------------
    def spans(self) -> list[FitSpan]:
        """The run's fits as spans of global steps, with their colours and labels."""
        spans = self.store.spans()
        return [
            FitSpan(fit.fit_index, start, end, _segment(fit), self._fit_colour(i, len(spans)))
            for i, (fit, start, end) in enumerate(spans)
        ]

    def _fit_colour(self, index: int, fits: int) -> str:
        """A fit's colour: one fit alone is in its run's colour (as every line of the run
        is, beside the other runs); several fits each in a colour of their own."""
        if fits == 1:
            style = getattr(self, "run_style", None)
            return style.colour if style is not None else LIVE_COLOUR
        return segment_colour(index)

    def _update_fit_rows(self) -> None:
        store = self.store
        for i, fit in enumerate(store.fits):
            steps = store.fit_steps.get(fit.fit_index, fit.global_step) - fit.global_step
            loss = store.fit_loss.get(fit.fit_index)
            self.sidebar.set_fit(
                fit.fit_index,
                self._fit_colour(i, len(store.fits)),
                fit.model.name,
                steps,
                "—" if loss is None else f"{loss:.4g}",
                _segment(fit).full,
            )
        if len(store.fits) > 1:
            self._auto_show_sidebar()

    def jump_to_fit(self, fit_index: int) -> None:
        """Show fit ``fit_index`` on every linked plot (its steps, or its length per fit)."""
        for span in self.spans():
            if span.index != fit_index:
                continue
            end = (
                span.end
                if span.end != math.inf
                else self.store.fit_steps.get(span.index, span.start)
            )
            if end <= span.start:
                return
            x0, x1 = (span.start, end) if self.x_mode == GLOBAL else (0.0, end - span.start)
            if self.x_mode not in STEP_AXES:  # time or epochs: where its steps land there
                x0, x1 = (float(v) for v in x_map(self.store, self.x_mode).to_x([span.start, end]))
            for group in self._groups():
                group.show_range(x0, x1)

    def isolate(self, fits: frozenset[int] | None) -> None:
        """Show only these fits on the per-fit axis (None: all); switches to that axis."""
        if fits is not None and self.x_mode != PER_FIT:
            self.set_x_mode(PER_FIT)
        for plot in self.plots.values():
            plot.set_isolated(fits)
            plot.refresh()
        for group in self._groups():
            group.reset()

    # -- families ------------------------------------------------------------
    def shown_families(self) -> list[str]:
        """Families whose plots are shown, in order."""
        return [f for f, p in self.plots.items() if p.shown]

    def set_family_shown(self, family: str, shown: bool) -> None:
        """Show or hide one family's plot, and remember the choice for this script."""
        plot = self.plots.get(family)
        if plot is None or plot.shown == shown:
            return
        plot.set_shown(shown)
        self.sidebar.set_family_shown(family, shown)
        self._store_choice(family, shown)
        self._hidden_by_default.discard(family)  # your choice from now on
        if shown:
            plot.refresh()

    def _on_family_toggled(self, family: str, shown: bool) -> None:
        self.set_family_shown(family, shown)

    def _decide_visibility(self) -> None:
        """Show or hide new families: the user's choice for this script, else the default."""
        stored_shown, stored_hidden = self._stored_choices()
        families = list(self.plots)
        loss = "loss" if "loss" in families else families[0]
        # a metric before the gauges (learning rate, gradient norm), which do not count
        # towards "many" either: a loop's train_loss and train_accuracy are what you
        # look at, not a fifth plot to hide
        first_metric = next((f for f in families if f != loss and not _is_gauge(f)), None)
        if first_metric is None:
            first_metric = next((f for f in families if f != loss), None)
        many = len([f for f in families if not _is_gauge(f)]) > MANY_FAMILIES
        running = self.store.running_families()
        for family in self._undecided:
            if family in stored_shown or family in stored_hidden:
                shown = family in stored_shown
            else:
                shown = not many or family in (loss, first_metric) or family in running
                if not shown:
                    self._hidden_by_default.add(family)
            plot = self.plots[family]
            plot.set_shown(shown)
            self.sidebar.add_family(family, shown)
        self._undecided = []
        if many:
            self._auto_show_sidebar()

    def _show_running_families(self) -> None:
        """The segment training now is always in view: its primary families (its losses,
        then its first metric) hidden only by default, never the ones the user hid, are
        shown when it starts reporting them."""
        for family in set(self.store.running_families()) & self._hidden_by_default:
            self._hidden_by_default.discard(family)
            plot = self.plots.get(family)
            if plot is not None and not plot.shown:
                plot.set_shown(True)
                self.sidebar.set_family_shown(family, True)

    def _settings_key(self) -> str:
        digest = hashlib.sha1(self._script.encode("utf-8")).hexdigest()[:16]
        return f"{SETTINGS_GROUP}/scripts/{digest}"

    def _stored_choices(self) -> tuple[set[str], set[str]]:
        if self.settings is None or not self._script:
            return set(), set()
        key = self._settings_key()
        return (
            _as_set(self.settings.value(f"{key}/shown", [])),
            _as_set(self.settings.value(f"{key}/hidden", [])),
        )

    def _store_choice(self, family: str, shown: bool) -> None:
        if self.settings is None or not self._script:
            return
        stored_shown, stored_hidden = self._stored_choices()
        (stored_shown if shown else stored_hidden).add(family)
        (stored_hidden if shown else stored_shown).discard(family)
        key = self._settings_key()
        self.settings.setValue(f"{key}/shown", sorted(stored_shown))
        self.settings.setValue(f"{key}/hidden", sorted(stored_hidden))
        self.settings.setValue(f"{key}/script", self._script)
        self.settings.sync()

    # -- sidebar -------------------------------------------------------------
    def _auto_show_sidebar(self) -> None:
        if self._sidebar_auto and not self.sidebar_button.isChecked():
            self.sidebar_button.setChecked(True)

    def _on_sidebar_toggled(self, on: bool) -> None:
        if not on:
            self._sidebar_auto = False  # the user closed it: do not reopen it by itself
        self.sidebar.setVisible(on)
        if on:
            total = max(self.splitter.width(), 2 * SIDEBAR_WIDTH)
            self.splitter.setSizes([total - SIDEBAR_WIDTH, SIDEBAR_WIDTH])

    # -- public ------------------------------------------------------------
    def note(self) -> str:
        """Title note about ``steps_per_execution`` (empty when every step is reported)."""
        spe = self.store.spe
        every = {fit: n for fit, n in spe.items() if n > 1}
        if not every:
            return ""
        if len(set(every.values())) == 1 and len(every) == len(spe):
            n = next(iter(every.values()))
            return f"(every {n} steps: steps_per_execution={n})"
        parts = [
            f"fit {fit + 1}: every {n} steps, steps_per_execution={n}"
            for fit, n in sorted(every.items())
        ]
        return f"({'; '.join(parts)})"


def _segment(fit: FitStarted) -> Segment:
    n = fit.number or fit.fit_index + 1  # fits are numbered apart from loops
    name = fit.model.name
    if fit.kind == "loop":
        return Segment(
            fit.global_step, f"L{fit.loop_index}", f"loop {fit.loop_index} {name}", fit.title()
        )
    return Segment(
        fit.global_step, str(n), f"{n} {name}", f"fit {n}: {name} ({fit.model.class_name})"
    )


def _setting(settings: QSettings | None, name: str, default: object) -> object:
    if settings is None:
        return default
    value = settings.value(f"{SETTINGS_GROUP}/{name}", default)
    if isinstance(value, str):
        return value.lower() in ("true", "1", "yes")
    return value


def _axis_setting(settings: QSettings | None) -> str:
    """The x axis kept in ``settings`` (the global step when absent or unknown)."""
    value = settings.value(f"{SETTINGS_GROUP}/x_axis", GLOBAL) if settings is not None else GLOBAL
    return value if value in AXES else GLOBAL


def _weight_setting(settings: QSettings | None) -> float:
    """The smoothing weight kept in ``settings`` (the default when absent or unreadable)."""
    if settings is None:
        return DEFAULT_WEIGHT
    value = settings.value(f"{SETTINGS_GROUP}/smoothing", DEFAULT_WEIGHT)
    try:
        weight = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DEFAULT_WEIGHT
    return min(max(weight, 0.0), 0.99) if math.isfinite(weight) else DEFAULT_WEIGHT


def _as_set(value: object) -> set[str]:
    if not value:
        return set()
    if isinstance(value, str):
        return {value}
    return {str(v) for v in value}


def _is_gauge(family: str) -> bool:
    """A family that shows how training runs, not how the model does: drawn after the
    metrics (the learning rate, a loop's gradient norm)."""
    return family == LR_KEY or family.startswith("gradient norm")
