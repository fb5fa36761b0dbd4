"""Probes of the inspector: the model tree, weights, gradients and layer outputs.

One file per thing measured; :mod:`.inspector` runs them on a cadence from the
fit's callback.
"""
