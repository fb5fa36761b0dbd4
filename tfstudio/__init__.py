"""tfstudio: a live training monitor for TensorFlow/Keras scripts."""

__version__ = "0.1.0"
