"""Runs user scripts and monitors TensorFlow/Keras training (never imports Qt).

Modules here import TensorFlow lazily, so importing ``tfstudio.engine`` is cheap.
"""
