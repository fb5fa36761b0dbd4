"""A past run's weights and gradients in the inspector's own views, in a window of their own.

Opened from the runs panel (**Inspector…**): the run folder's recorded
statistics and histograms are turned back into inspector events
(:func:`tfstudio.core.recorded.inspector_events`) and drawn by the same
weights and gradients views as a live run.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QLabel, QTabWidget, QVBoxLayout, QWidget

from tfstudio.core.inspector_store import InspectorStore
from tfstudio.core.locations import Location, location
from tfstudio.core.recorded import inspector_events
from tfstudio.core.runs import RunReader, read_run_json
from tfstudio.ui.panels.gradients import GradientsView
from tfstudio.ui.panels.weights import WeightsView


class RecordedStore(InspectorStore):
    """An inspector store filled once from a run folder."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def status_text(self) -> str:
        """Where the data comes from, instead of the live sampling status."""
        samples = max((len(h.steps) for h in self.weights.values()), default=0)
        return f"Recorded in run '{self.name}': {samples} samples."


class RecordedInspector(QDialog):
    """Weights and gradients tabs for one recorded run.

    Args:
        run_dir: the run folder, a path or URL (or any TensorBoard log folder with histograms).
        reader: an up-to-date reader of that folder (read again if None).
    """

    def __init__(
        self,
        run_dir: str | Location,
        reader: RunReader | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        path = location(run_dir)
        if reader is None:
            reader = RunReader(path)
            reader.update()
        self.setWindowTitle(f"Inspector — {path.name} (recorded)")
        self.resize(1000, 720)
        self.store = RecordedStore(path.name)
        self.events = inspector_events(reader.scalars, reader.histograms, read_run_json(path))
        for event in self.events:
            self.store.ingest(event)
        paint_clock = [0.0]
        self.weights = WeightsView(self.store, paint_clock)
        self.gradients = GradientsView(self.store, paint_clock)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.weights, "Weights")
        self.tabs.addTab(self.gradients, "Gradients")
        self.tabs.currentChanged.connect(lambda _: self.refresh())
        layout = QVBoxLayout(self)
        if not self.events:
            note = QLabel(
                "This run has no recorded weights or gradients: the inspector was off, "
                "or the folder holds no histograms."
            )
            note.setWordWrap(True)
            layout.addWidget(note)
        layout.addWidget(self.tabs, 1)
        self.refresh()

    def refresh(self) -> None:
        """Draw the tab on screen."""
        view = self.tabs.currentWidget()
        view.refresh()
