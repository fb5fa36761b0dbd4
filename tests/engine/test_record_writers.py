"""The recorder's writers: what an inspector sample puts into the run's event files."""

from __future__ import annotations

from tfstudio.core.events import (
    GradientStats,
    GradientVariable,
    LayerOutput,
    LayerOutputs,
    VariableStats,
    WeightStats,
)
from tfstudio.engine.record_writers import WRITERS


class Taken:
    """Stands for a Recorder: keeps what the writers hand it."""

    def __init__(self) -> None:
        self.info: dict = {}
        self.histograms: dict[str, tuple[int, list[float], tuple[int, ...]]] = {}
        self.scalars_at: dict[str, tuple[int, float]] = {}

    def _now_wall(self) -> float:
        return 1.7e9

    def histogram(self, tag, step, edges, counts, wall) -> None:
        self.histograms[tag] = (step, list(edges), tuple(counts))

    def scalars(self, step, values, wall) -> None:
        self.scalars_at.update({k: (step, v) for k, v in values.items()})


def test_each_inspector_sample_writes_its_histograms_over_min_to_max_and_its_scalars():
    kernel = VariableStats("m/dense/kernel", (3, 1), 0.5, 0.1, -1.0, 3.0, 2.0, 0.0, (1, 0, 2, 1))
    bias = VariableStats("m/dense/bias", (1,), 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, (), (0.0,))
    grad = GradientVariable("m/dense/kernel", 0.25, -0.5, 0.5, (2, 2))
    out = LayerOutput(
        0, "dense", "m/dense", "Dense", 1, (4, 1), "float32", 0.1, 0.2, 0.0, 1.0, 0.0, 0.5, (4,)
    )
    rec = Taken()
    for event in (
        WeightStats(0, 7, (kernel, bias)),
        GradientStats(0, 7, 0.25, (grad,)),
        LayerOutputs(0, 7, 4, (out,)),
    ):
        WRITERS[type(event)](rec, event)
    assert rec.histograms == {
        "weights/m/dense/kernel": (7, [-1.0, 0.0, 1.0, 2.0, 3.0], (1, 0, 2, 1)),
        "gradients/m/dense/kernel": (7, [-0.5, 0.0, 0.5], (2, 2)),
        "outputs/m/dense": (7, [0.0, 1.0], (4,)),
    }  # the bias has no histogram: none is written
    assert rec.scalars_at["weights/m/dense/kernel/norm"] == (7, 2.0)
    assert rec.scalars_at["weights/m/dense/bias/values/0"] == (7, 0.0)
    assert rec.scalars_at["gradients/global_norm"] == (7, 0.25)
    assert rec.scalars_at["outputs/m/dense/dead_fraction"] == (7, 0.5)
    assert rec.info["variables"] == {"m/dense/kernel": [3, 1], "m/dense/bias": [1]}
