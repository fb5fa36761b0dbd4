"""Metrics panel: one live plot per metric family (``loss`` and ``val_loss`` share one).

Per-step values go into decimated :class:`~tfstudio.core.series.Series` stores,
so memory stays bounded however long the run; each curve gets one ``setData``
per frame, and only when it changed. pyqtgraph clips to the visible range and
peak-downsamples to the pixel width, so millions of steps stay smooth.

A run is a sequence of segments (``fit`` calls): no line crosses from one to the
next, and the x axis shows either the global step or the step within each fit
(fits overlaid). All plots share their x range unless unlinked. A side list
chooses the families to plot (remembered per script) and lists the fits.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.events import (
    CheckpointRestored,
    CheckpointSaved,
    EpochEnded,
    FitEnded,
    FitStarted,
    LearningRate,
    NonFinite,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.core.run_model import RunModel
from tfstudio.core.run_store import (
    LR_KEY,
    NAN_MARK,
    RESTORE_MARK,
    SERIES_CAPACITY,
    Mark,
    RunStore,
    family_of,
)
from tfstudio.core.x_axes import AXES, STEP_AXES, axis_of
from tfstudio.ui.panels.metric_plot import (
    GLOBAL,
    PER_FIT,
    X_LABELS,
    MetricPlot,
    RunLayer,
)
from tfstudio.ui.panels.metrics_families import (
    MANY_FAMILIES,
    SETTINGS_GROUP,
    FamiliesAndFits,
    _axis_setting,
    _is_gauge,
    _setting,
    _weight_setting,
)
from tfstudio.ui.panels.metrics_sidebar import MetricsSidebar
from tfstudio.ui.panels.visibility import in_scroll_view, out_of_sight
from tfstudio.ui.plotting import BACKGROUND, XLinkGroup
from tfstudio.ui.plotting.smoothing import SmoothingSlider
from tfstudio.ui.plotting.style import RunStyle

__all__ = ["GLOBAL", "MANY_FAMILIES", "PER_FIT", "MetricPlot", "MetricsPanel", "family_of"]

NAN_LINE = "#d62728"
RESTORE_LINE = "#2ca02c"


class MetricsPanel(FamiliesAndFits, QWidget):
    """Stack of :class:`MetricPlot`, one per metric family, fed by the bridge.

    Args:
        capacity: buckets per per-step series (memory bound per curve).
        settings: where the families chosen per script and the x-link setting are
            kept; None keeps them for this session only.
        parent: Qt parent.
        model: the run on show (the window's session gives it and feeds it;
            :meth:`show_model` changes it); None: one of the panel's own, fed by the panel.
    """

    EVENTS = (
        StepEnded,
        RunStarted,
        RunEnded,
        FitStarted,
        FitEnded,
        EpochEnded,
        LearningRate,
        NonFinite,
        CheckpointRestored,
        CheckpointSaved,
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(
        self,
        capacity: int = SERIES_CAPACITY,
        settings: QSettings | None = None,
        parent: QWidget | None = None,
        model: RunModel | None = None,
    ) -> None:
        super().__init__(parent)
        self.capacity = capacity
        self.settings = settings
        self._own = model is None  # used alone: the panel feeds a model of its own
        self.x_mode = _axis_setting(settings)
        self.linked = bool(_setting(settings, "link_x", True))
        self.smoothing = _weight_setting(settings)
        self.model = model if model is not None else self._new_model()
        self.store = self.model.metrics
        self._prefs: dict[str, tuple[bool, bool]] = {}  # family -> (show all, log), this session
        self._script = ""

        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self._content = QWidget()
        self._content.setObjectName("metricsContent")
        self._content.setStyleSheet(f"QWidget#metricsContent {{ background: {BACKGROUND}; }}")
        self._layout = QVBoxLayout(self._content)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.setSpacing(6)
        self._placeholder = QLabel("Open a training script and press Run: its metrics appear here.")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._placeholder.setWordWrap(True)  # a failed run's error is a long line
        self._placeholder.setStyleSheet("color: #808080; font-size: 13pt;")
        self._layout.addWidget(self._placeholder)
        self._layout.addStretch(0)
        self.scroll.setWidget(self._content)

        self.sidebar = MetricsSidebar()
        self.sidebar.family_toggled.connect(self._on_family_toggled)
        self.sidebar.fit_clicked.connect(self.jump_to_fit)
        self.sidebar.isolate_changed.connect(self.isolate)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.scroll)
        self.splitter.addWidget(self.sidebar)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 0)
        self.splitter.setChildrenCollapsible(False)

        bar = QHBoxLayout()
        bar.setContentsMargins(6, 2, 6, 0)
        bar.addWidget(QLabel("x axis:"))
        self.x_mode_box = QComboBox()
        for mode in AXES:
            self.x_mode_box.addItem(X_LABELS[mode], mode)
        self.x_mode_box.setCurrentIndex(self.x_mode_box.findData(self.x_mode))
        self.x_mode_box.setToolTip(
            "global step: the run's fits one after another; "
            "step within fit: every fit from 0, overlaid in its own colour; "
            "relative time: seconds since each run started; "
            "wall time: the clock time of each step; epoch: epochs done"
        )
        self.x_mode_box.currentIndexChanged.connect(
            lambda i: self.set_x_mode(self.x_mode_box.itemData(i))
        )
        bar.addWidget(self.x_mode_box)
        self.link_box = QCheckBox("link x axes")
        self.link_box.setToolTip(
            "Zoom or pan one plot and all follow (wheel / drag); double-click a plot to reset"
        )
        self.link_box.setChecked(self.linked)
        self.link_box.toggled.connect(self.set_linked)
        bar.addWidget(self.link_box)
        self.previous_box = QCheckBox("previous run")
        self.previous_box.setToolTip(
            "The script's previous run (from the runs folder), drawn faintly behind this one; "
            "its folder is named in the hover readout"
        )
        self.previous_box.setChecked(bool(_setting(settings, "previous_run", True)))
        self.previous_box.toggled.connect(self._on_previous_toggled)
        self.previous_box.hide()  # until there is a previous run to show
        bar.addWidget(self.previous_box)
        bar.addSpacing(12)
        self.smoothing_slider = SmoothingSlider(self.smoothing)
        self.smoothing_slider.changed.connect(self.set_smoothing)
        bar.addWidget(self.smoothing_slider)
        bar.addStretch(1)
        self.sidebar_button = QToolButton()
        self.sidebar_button.setText("Plots && fits")
        self.sidebar_button.setCheckable(True)
        self.sidebar_button.setToolTip("Choose the plots to see; list the run's fits")
        self.sidebar_button.toggled.connect(self._on_sidebar_toggled)
        bar.addWidget(self.sidebar_button)
        self._sidebar_auto = True  # shown by itself once there is something to choose

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.splitter, 1)
        self.sidebar.hide()

        self.plots: dict[str, MetricPlot] = {}
        self.paint_clock = [0.0]  # seconds spent painting plots, ever (read by the bridge)
        self.xgroup = XLinkGroup()
        self.compared: list[RunLayer] = []  # other runs drawn behind the run on show
        self.run_style: RunStyle | None = None  # the run on show's (None: the live run's)
        self._behind = False  # data arrived while out of sight: drawn when shown
        self._scrolled_out = False  # a plot out of the scroll area's view missed a redraw
        # Scrolling or resizing brings plots into view: they catch up at once.
        bar_v = self.scroll.verticalScrollBar()
        bar_v.valueChanged.connect(self._catch_up)
        bar_v.rangeChanged.connect(self._catch_up)
        self._reset_data()

    def _new_model(self) -> RunModel:
        return RunModel(capacity=self.capacity, smoothing=self.smoothing, live=True)

    def _reset_data(self) -> None:
        if self._own:  # (the window's session gives each run a model of its own)
            self.model = self._new_model()
        self.store = self.model.metrics
        self._drawn_revision = -1
        self._fits_drawn = 0
        self._marks_drawn = 0
        self._note_drawn = ""
        self._run_ended = False
        self._finished = False
        self._undecided: list[str] = []  # families whose visibility is not chosen yet
        self._hidden_by_default: set[str] = set()  # hidden by the many-families rule, not by you

    # -- the run on show and the runs beside it -----------------------------------
    def show_model(self, model: RunModel) -> None:
        """Show ``model``'s metrics as the run on show (the live run's, or a reopened run's)."""
        if model is self.model and model.metrics is self.store:
            return
        self.clear()
        self.model = model
        self.store = model.metrics
        self._script = self.store.script
        self.store.set_smoothing(self.smoothing)

    def show_store(self, store: RunStore) -> None:
        """Show ``store`` as the run on show (every tool: fits, epochs, marks, readout).

        The live run's store is shown by itself when a run starts; a recorded run
        picked in the Runs panel is shown this way when no run is live.
        """
        if store is self.store:
            return
        self.clear()
        self.store = store
        self._script = store.script
        store.set_smoothing(self.smoothing)

    def set_run_style(self, style: RunStyle | None) -> None:
        """How the run on show is drawn and named (None: the live run's blue, its store's
        name); a picked run on show keeps the colour of its swatch in the Runs table."""
        if style != self.run_style:
            self.run_style = style
            self._drawn_revision = -1

    def set_compared(self, layers: Sequence[RunLayer]) -> None:
        """The other runs drawn behind the run on show, each in its own colour."""
        self.compared = list(layers)
        for layer in self.compared:
            layer.store.set_smoothing(self.smoothing)
        for plot in self.plots.values():
            plot.set_layers(self.compared)
        self._drawn_revision = -1  # their families may need plots

    def _on_previous_toggled(self, on: bool) -> None:
        if self.settings is not None:
            self.settings.setValue(f"{SETTINGS_GROUP}/previous_run", bool(on))

    def stores(self) -> list[RunStore]:
        """Every run shown: the run on show first, then the compared ones."""
        return [self.store, *(layer.store for layer in self.compared)]

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """A run of steps (drawn at the next refresh; a panel used alone stores them)."""
        if self._own:
            self.store.add_steps(steps)

    def ingest_event(self, event: object) -> None:
        """Follow the live run (a panel used alone stores its events; a new run, a new model)."""
        if isinstance(event, RunStarted):
            if self._own:
                self.clear()
            self._script = event.script
        elif isinstance(event, RunEnded):
            self._run_ended = True
        if self._own:
            self.store.add_event(event)

    def add_mark(self, step: float, text: str, colour: str = NAN_LINE) -> None:
        """Mark ``step`` on every plot (now and on plots made later)."""
        kind = NAN_MARK if colour == NAN_LINE else RESTORE_MARK
        self.store.marks.append(Mark(step, text, kind))
        self.store.revision += 1

    def marks(self) -> list[tuple[float, str]]:
        """(step, text) of the NaN and restore marks, oldest first."""
        return [(m.step, m.text) for m in self.store.marks]

    def refresh(self) -> None:
        """Bring the plots up to the stores and redraw changed curves once.

        Out of sight (another tab in front, the window minimised) nothing is drawn:
        the stores keep the data and the plots catch up when shown (``showEvent``).
        """
        if out_of_sight(self):
            self._behind = True
            return
        self._behind = False
        revision = sum(s.revision for s in self.stores())
        if revision != self._drawn_revision:
            self._drawn_revision = revision
            self._sync()
        if self._undecided:
            self._decide_visibility()
        if self._hidden_by_default:
            self._show_running_families()
        self._refresh_in_view()
        # a recorded run, or a script opened and not run (its previous run is shown whole):
        # no room to grow (a Run clears the plots)
        done = self.store.ended is not None or not self.model.live or self.store.started is None
        if self._run_ended or (done and not self._finished):
            self._finished = True  # the x range fits the data, with no room to grow
            for group in self._groups():
                group.finish()
            self._update_fit_rows()
        self._run_ended = False

    def _in_view(self, plot: MetricPlot) -> bool:
        """Whether any of ``plot`` is inside the scroll area's view (plots scrolled out of
        it skip their redraws: with a metric per plot a run's plots overflow the view)."""
        return in_scroll_view(plot.widget, self.scroll)

    def _refresh_in_view(self) -> None:
        """Bring the plots in the scroll area's view up to date; note if any is not."""
        self._scrolled_out = False
        for plot in self.plots.values():
            if self._in_view(plot):
                plot.refresh()
            else:
                self._scrolled_out = True

    def _catch_up(self, *_: object) -> None:
        """Scrolled or resized: draw the plots that came into view since they missed a redraw."""
        if self._scrolled_out and not self._behind:
            self._refresh_in_view()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt API)
        """Shown again: draw what arrived while out of sight."""
        super().showEvent(event)
        if self._behind:
            self.refresh()

    def _sync(self) -> None:
        """Plots for new families, curves for new lines, and the run's decorations."""
        store = self.store
        families = store.families()
        for other in self.compared:
            families += [f for f in other.store.families() if f not in families]
        for family in families:
            if family == LR_KEY and not (self.plots or (store.ended and store.global_step)):
                # the learning rate's plot comes after the metrics'; a run that ended
                # before its first step (an error at the first batch) has the words of
                # its end in the empty area instead, not a plot of one rate
                continue
            plot = self._plot_for(family)
            # its clock and epochs place it on the time and epoch axes; its style colours it
            plot.set_run(store, self.run_style)
            plot.bind_run()  # every run's lines are bound alike (the others' at refresh)
        note = self.note()
        if note != self._note_drawn:
            self._note_drawn = note
            for plot in self.plots.values():
                plot.set_note(note)
        for plot in self.plots.values():
            plot.sync_epoch_lines(store.epoch_steps)
        if len(store.fits) != self._fits_drawn:
            self._fits_drawn = len(store.fits)
            spans = self.spans()
            for plot in self.plots.values():
                plot.set_spans(spans)
        planned = self._planned_end()
        for group in self._groups():
            group.set_planned(planned)
        for mark in store.marks[self._marks_drawn :]:
            colour = NAN_LINE if mark.kind == NAN_MARK else RESTORE_LINE
            for plot in self.plots.values():
                plot.add_mark(mark.step, mark.text, colour)
        self._marks_drawn = len(store.marks)
        if store.fits:
            self._update_fit_rows()

    # -- x axis --------------------------------------------------------------
    def set_x_mode(self, mode: str) -> None:
        """The plots' x axis: ``"global"`` (the run's global step), ``"fit"`` (step within
        fit, overlaid), ``"relative"``, ``"wall"`` or ``"epoch"`` (or a ``--x-axis`` name);
        remembered in the settings."""
        mode = mode if mode in X_LABELS else axis_of(mode)
        self.x_mode = mode
        if self.settings is not None:
            self.settings.setValue(f"{SETTINGS_GROUP}/x_axis", mode)
        i = self.x_mode_box.findData(mode)
        if self.x_mode_box.currentIndex() != i:
            self.x_mode_box.setCurrentIndex(i)
        for plot in self.plots.values():
            plot.set_x_mode(mode)
            plot.refresh()
        for group in self._groups():
            group.reset()

    def set_linked(self, linked: bool) -> None:
        """Share one x range between all plots (True) or let each have its own."""
        self.linked = bool(linked)
        if self.link_box.isChecked() != self.linked:
            self.link_box.setChecked(self.linked)
        if self.settings is not None:
            self.settings.setValue(f"{SETTINGS_GROUP}/link_x", self.linked)
        for plot in self.plots.values():
            group = self.xgroup if self.linked else XLinkGroup()
            group.finished = self.xgroup.finished
            group.add(plot)
        for group in self._groups():
            group.reset()

    def set_smoothing(self, weight: float) -> None:
        """EMA weight of every per-step curve (0: raw only); remembered in the settings."""
        weight = max(0.0, float(weight))
        if abs(self.smoothing_slider.weight() - weight) > 0.005:
            self.smoothing_slider.set_weight(weight)  # calls back here with the slider's value
            return
        if self.settings is not None:
            self.settings.setValue(f"{SETTINGS_GROUP}/smoothing", weight)
        if weight == self.smoothing:
            return
        self.smoothing = weight
        for store in self.stores():
            store.set_smoothing(weight)
        for plot in self.plots.values():
            plot.set_smoothing(weight)
            plot.refresh()

    def _planned_end(self) -> float:
        """The x of the running fit's last step when ``fit`` was told it (epochs x
        steps per epoch, less the steps its restores went back: Keras's epoch loop goes
        on after a restore): the plots' x range grows no further while the data is short
        of it; 0 when not known (a dataset of unknown length, a custom loop) or the run
        is over."""
        store = self.store
        if not store.fits or store.ended is not None or self.x_mode not in STEP_AXES:
            return 0.0
        if not self.model.live:  # a recorded run ends where its data does
            return 0.0
        fit = store.fits[-1]
        if fit.kind != "fit" or not fit.steps_per_epoch or fit.epochs <= fit.initial_epoch:
            return 0.0
        steps = (fit.epochs - fit.initial_epoch) * fit.steps_per_epoch
        steps -= store.rewound.get(fit.fit_index, 0)
        return float(steps if self.x_mode == PER_FIT else fit.global_step + steps)

    def _groups(self) -> list[XLinkGroup]:
        groups = [self.xgroup]
        for plot in self.plots.values():
            if plot.group is not None and plot.group not in groups:
                groups.append(plot.group)
        return groups

    def clear(self) -> None:
        """Remove every plot and forget all data (the x axis and link choices stay)."""
        for plot in self.plots.values():
            self._layout.removeWidget(plot.widget)
            plot.widget.hide()
            plot.widget.deleteLater()
        self.plots = {}
        self.xgroup = XLinkGroup()
        self.sidebar.clear()
        self._reset_data()
        self._placeholder.show()
        for plot_layer in self.compared:
            plot_layer.curves = {}
            plot_layer.overlays = {}

    def set_placeholder(self, text: str) -> None:
        """What the empty area says before any metric arrives (e.g. which script is open)."""
        self._placeholder.setText(text)

    def placeholder(self) -> str:
        """The empty area's text."""
        return self._placeholder.text()

    def series_nbytes(self) -> int:
        """Bytes held by the run on show's series (smoothed twins included)."""
        return self.store.nbytes()

    def _plot_for(self, family: str) -> MetricPlot:
        plot = self.plots.get(family)
        if plot is None:
            group = self.xgroup if self.linked else XLinkGroup()
            plot = MetricPlot(family, self.capacity, self.paint_clock, group, self.smoothing)
            self.plots[family] = plot
            self._placeholder.hide()
            # loss first (users look there first), then the metrics in the order they came,
            # then the training's own gauges (learning rate, gradient norm): the rate
            # arrives at a fit's start, before any metric, and took the second place
            if family == "loss":
                at = 1
            elif _is_gauge(family):
                at = self._layout.count() - 1
            else:
                gauges = [
                    self._layout.indexOf(p.widget)
                    for f, p in self.plots.items()
                    if f != family and _is_gauge(f)
                ]
                at = min(gauges) if gauges else self._layout.count() - 1
            self._layout.insertWidget(at, plot.widget)
            plot.set_note(self.note())
            plot.sync_epoch_lines(self.store.epoch_steps)
            plot.set_spans(self.spans())
            plot.set_x_mode(self.x_mode)
            for mark in self.store.marks[: self._marks_drawn]:
                colour = NAN_LINE if mark.kind == NAN_MARK else RESTORE_LINE
                plot.add_mark(mark.step, mark.text, colour)
            plot.set_layers(self.compared)
            show_all, log = self._prefs.get(family, (False, False))
            plot.set_show_all(show_all)
            plot.set_log(log)
            plot.all_button.toggled.connect(lambda _on, f=family: self._remember(f))
            plot.log_button.toggled.connect(lambda _on, f=family: self._remember(f))
            plot.set_shown(False)  # until _decide_visibility, at the end of this frame
            self._undecided.append(family)
        return plot

    def _remember(self, family: str) -> None:
        plot = self.plots.get(family)
        if plot is not None:
            self._prefs[family] = (plot.show_all, plot.log)
