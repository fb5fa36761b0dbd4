"""Monitoring never changes what the script computes: bit for bit, with everything on.

A seeded, op-deterministic script (tests/scripts/bit_exact.py: Dense,
BatchNormalization, Dropout, a layer that writes a variable in ``call``, a custom
``train_step`` and a custom ``GradientTape`` loop) runs once under plain Python
and once in a tfstudio worker with the inspector sampling every step, recording,
the NaN guard and a checkpoint every 2 steps. Every final weight, the optimizers'
iterations and the next random draws (TensorFlow, Keras, NumPy, Python) must be
equal byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.workers import of, run_in_worker
from tfstudio.cli import headless_parser, run_options
from tfstudio.core.events import (
    CheckpointSaved,
    GradientStats,
    LayerOutputs,
    ModelTree,
    MonitorError,
    RunRecording,
    StepEnded,
    WeightStats,
)
from tfstudio.core.options import RunOptions

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
BIT_EXACT = ROOT / "tests" / "scripts" / "bit_exact.py"


def plain_python(script: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``script`` as ``python script.py`` would, no tfstudio anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFSTUDIO")}
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def everything_on(tmp_path: Path) -> RunOptions:
    """Inspector every step, recording, NaN guard, a checkpoint every 2 steps."""
    return RunOptions(
        logdir=str(tmp_path / "runs"),
        record=True,
        inspector=True,
        sample_every=1,
        checkpoint_every=2,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        on_nan="stop",
    )


def test_seeded_training_is_bit_identical_with_everything_on(tmp_path):
    plain = plain_python(BIT_EXACT, [str(tmp_path / "plain.npz")], tmp_path)
    assert plain.returncode == 0, plain.stderr
    ended, events = run_in_worker(
        BIT_EXACT, [str(tmp_path / "studio.npz")], everything_on(tmp_path)
    )
    assert ended.status == "finished", ended
    assert not of(events, MonitorError), of(events, MonitorError)[0].traceback
    # Everything was on: probes of the fit and of the loop, checkpoints, a recording.
    assert len(of(events, LayerOutputs)) >= 5
    assert {e.fit_index for e in of(events, GradientStats)} >= {0}
    assert len(of(events, WeightStats)) >= 10
    assert len(of(events, CheckpointSaved)) >= 3
    assert of(events, RunRecording)

    want = np.load(tmp_path / "plain.npz")
    got = np.load(tmp_path / "studio.npz")
    assert sorted(got.files) == sorted(want.files)
    different = [k for k in want.files if want[k].tobytes() != got[k].tobytes()]
    assert different == []
    assert float(got["counter"]) == 5.0  # one write per training step, none per probe


def test_no_inspector_turns_every_probe_off(tmp_path):
    ns = headless_parser().parse_args(
        ["--no-inspector", "--sample-every", "1", "--no-record", str(BIT_EXACT), "x"]
    )
    options = run_options(ns)
    assert options.inspector is False
    ended, events = run_in_worker(BIT_EXACT, [str(tmp_path / "off.npz")], options)
    assert ended.status == "finished", ended
    assert len(of(events, StepEnded)) >= 10  # steps are still reported
    for kind in (ModelTree, WeightStats, GradientStats, LayerOutputs):
        assert not of(events, kind), kind.__name__
