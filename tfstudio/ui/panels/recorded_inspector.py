"""A past run's weights and gradients in the inspector's own views, in a window of their own.

Opened from the runs panel (**Inspector…**): the run folder's recorded
statistics and histograms are turned back into inspector events
(:func:`tfstudio.core.recorded.inspector_events`) and drawn by the same
weights and gradients views as a live run.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QLabel, QTabWidget, QVBoxLayout, QWidget

from tfstudio.core.locations import Location, location
from tfstudio.core.recorded import inspector_events
from tfstudio.core.run_store import RunStore
from tfstudio.core.runs import RunReader, read_run_json
from tfstudio.ui.panels.gradients import GradientsView
from tfstudio.ui.panels.weights import WeightsView


class RecordedInspector(QDialog):
    """Weights and gradients tabs for one recorded run.

    The views draw from the run's :class:`~tfstudio.core.run_store.RunStore` (its
    ``inspector`` part), as the live inspector draws from the live run's.

    Args:
        run_dir: the run folder, a path or URL (or any TensorBoard log folder with histograms).
        reader: an up-to-date reader of that folder (read again if None).
        run: the run's store (the Runs panel's, when picked); a new one if None.
    """

    def __init__(
        self,
        run_dir: str | Location,
        reader: RunReader | None = None,
        parent: QWidget | None = None,
        run: RunStore | None = None,
    ) -> None:
        super().__init__(parent)
        path = location(run_dir)
        if reader is None:
            reader = RunReader(path)
            reader.update()
        self.setWindowTitle(f"Inspector — {path.name} (recorded)")
        self.resize(1000, 720)
        self.run = run if run is not None else RunStore(path.name, path=str(path))
        self.events = inspector_events(reader.scalars, reader.histograms, read_run_json(path))
        self.store = self.run.inspector
        self.store.clear()
        self.store.recorded_in = path.name
        self.run.add(self.events)
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
