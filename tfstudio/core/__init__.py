"""Pure-Python core shared by the engine and the UI (no TensorFlow, no Qt)."""
