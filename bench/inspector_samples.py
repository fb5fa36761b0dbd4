"""What each inspector sample of a script's run cost, as its Model dock reports it.

Runs a script in this process (as a worker does, recording off) ``--runs`` times and
prints, per run, every ``InspectorStatus``: the sample's cost (``probe_ms``: what the
dock shows as the last sample's cost) and the inspector's share of training time at the
run's last sample (NaN: under a second of training backs it, the dock says "too little
training to measure"). To compare with an older tree, run this file from there (copy it
into that checkout's ``bench/``).

    python bench/inspector_samples.py resources/examples/basic_training_loop.py [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio


def main() -> None:
    """Run the script and print one line a run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", type=Path)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()

    from tfstudio.core.channel import Channel
    from tfstudio.core.events import InspectorStatus, RunEnded
    from tfstudio.core.options import RunOptions
    from tfstudio.engine.session import TrainingSession

    for run in range(args.runs):
        channel = Channel()
        session = TrainingSession(
            args.script, [], channel, capture_output=False, options=RunOptions(record=False)
        )
        ended: RunEnded = session.run()
        statuses = [e for e in channel.drain() if isinstance(e, InspectorStatus)]
        costs = ", ".join(f"{s.probe_ms:.1f}" for s in statuses)
        share = statuses[-1].overhead if statuses else float("nan")
        print(
            f"run {run + 1} ({ended.status}): {len(statuses)} samples, costs [{costs}] ms, "
            f"share at the last {share:.2%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
