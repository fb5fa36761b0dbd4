"""The inspector in the window: model dock plus weights, gradients, outputs and walk tabs.

The views draw the inspector part of the run model shown (``model.inspector``, an
:class:`InspectorStore`): the live run's as its samples come, or a reopened run's as
its folder recorded them (:meth:`InspectorPanels.show_model`). Once per frame only the
tab on screen is redrawn (and the model tree when a model was announced).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabWidget, QWidget

from tfstudio.core.events import (
    CheckpointRestored,
    FitStarted,
    GradientStats,
    InspectorStatus,
    LayerOutputs,
    ModelTree,
    RunEnded,
    RunStarted,
    StepEnded,
    WeightStats,
)
from tfstudio.core.inspector_store import InspectorStore
from tfstudio.core.options import RunOptions
from tfstudio.core.run_model import RunModel
from tfstudio.ui.panels.gradients import GradientsView
from tfstudio.ui.panels.model import ModelPanel
from tfstudio.ui.panels.outputs import OutputsView
from tfstudio.ui.panels.walk import WalkView
from tfstudio.ui.panels.weights import WeightsView

VIEWS = ("metrics", "model", "weights", "gradients", "outputs", "walk")


class InspectorPanels(QObject):
    """Builds the inspector's views around the metrics panel and feeds them.

    Args:
        window: the main window (gets the model dock).
        metrics: the metrics panel, first tab of the central tabs.
        model: the run shown (the window's session gives it and feeds it); None: one of
            its own, fed by the panel.
    """

    EVENTS = (
        ModelTree,
        WeightStats,
        GradientStats,
        LayerOutputs,
        InspectorStatus,
        RunStarted,
        CheckpointRestored,
        FitStarted,  # titles the model tree: "fit 2: ..." or "loop 1: ..."
        RunEnded,  # the status then says a run too short to measure the overhead
    )  # the kinds the bridge hands ingest_event / ingest_steps (and no others)

    def __init__(
        self, window: QMainWindow, metrics: QWidget, model: RunModel | None = None
    ) -> None:
        super().__init__(window)
        self._own = model is None  # used alone: the panel feeds a model of its own
        self.run = model if model is not None else RunModel(live=True)
        self.store: InspectorStore = self.run.inspector
        self.paint_clock = [0.0]  # read by the bridge's redraw budget
        self.weights = WeightsView(self.store, self.paint_clock)
        self.gradients = GradientsView(self.store, self.paint_clock)
        self.outputs = OutputsView(self.store, self.paint_clock)
        self.walk = WalkView(self.store)
        self.tabs = QTabWidget()
        self.tabs.addTab(metrics, "Metrics")
        self.tabs.addTab(self.weights, "Weights")
        self.tabs.addTab(self.gradients, "Gradients")
        self.tabs.addTab(self.outputs, "Layer outputs")
        self.tabs.addTab(self.walk, "Forward walk")
        self._last_view: QWidget = self.weights  # the inspector view "Show run" brings to the front
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.model = ModelPanel(self.store)
        self.model_dock = QDockWidget("Model", window)
        self.model_dock.setObjectName("modelDock")
        self.model_dock.setWidget(self.model)
        window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.model_dock)
        self.model.selected.connect(self._on_selected)
        self.outputs.layer_chosen.connect(self._on_layer_chosen)
        self.walk.layer_chosen.connect(self._on_walk_chosen)

    # -- the bridge's panel protocol ----------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Steps are the metrics panel's business."""

    def ingest_event(self, event: object) -> None:
        """Inspector events go into the model (when the panel feeds its own): a restored
        checkpoint drops the samples after its step (the rule every view follows)."""
        if self._own:
            self.run.apply((event,))

    def show_model(self, model: RunModel) -> None:
        """Show ``model``'s samples in every inspector view (live or reopened alike)."""
        if model is self.run:
            return
        self.run = model
        self.store = model.inspector
        for view in (self.weights, self.gradients, self.outputs, self.walk, self.model):
            view.store = self.store
            view._drawn = -1  # noqa: SLF001 - another store: drawn afresh
            if hasattr(view, "_row_drawn"):
                view._row_drawn = {}  # noqa: SLF001
        self.refresh()

    def refresh(self) -> None:
        """Redraw the model tree and the tab on screen if their data changed."""
        self.model.refresh()
        view = self.tabs.currentWidget()
        if view is not self.tabs.widget(0) and hasattr(view, "refresh"):
            view.refresh()

    # -- views ----------------------------------------------------------------------
    def show_view(self, name: str) -> None:
        """Bring a view to the front: one of :data:`VIEWS`."""
        if name not in VIEWS:
            raise ValueError(f"unknown view {name!r}: expected one of {', '.join(VIEWS)}")
        if name == "model":
            self.model_dock.show()
            self.model_dock.raise_()
            self.tabs.setCurrentWidget(self.weights)
            window = self.model_dock.parentWidget()
            if isinstance(window, QMainWindow):
                window.resizeDocks([self.model_dock], [640], Qt.Orientation.Horizontal)
            return
        widget = {
            "metrics": self.tabs.widget(0),
            "weights": self.weights,
            "gradients": self.gradients,
            "outputs": self.outputs,
            "walk": self.walk,
        }[name]
        self.tabs.setCurrentWidget(widget)

    def show_inspector(self) -> None:
        """Bring the inspector's views to the front: the one looked at last, else Weights."""
        self.tabs.setCurrentWidget(self._last_view)

    def run_options(self) -> RunOptions:
        """The inspector's settings for the next run (from the model panel)."""
        return self.model.run_options()

    def _on_tab_changed(self, index: int) -> None:
        if index > 0:
            self._last_view = self.tabs.widget(index)
        self.refresh()

    def _on_selected(self, path: str | None) -> None:
        for view in (self.weights, self.gradients, self.outputs):
            view.set_selection(path)

    def _on_layer_chosen(self, path: str) -> None:
        self.model.select_path(path)
        self.weights.set_selection(path)
        self.gradients.set_selection(path)

    def _on_walk_chosen(self, path: str) -> None:
        self._on_layer_chosen(path)
        self.outputs.set_selection(path)
