"""PySide6 + pyqtgraph user interface. Never imports TensorFlow, Keras or the engine."""
