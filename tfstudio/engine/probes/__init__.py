"""Probes: one module per thing measured inside the run."""
