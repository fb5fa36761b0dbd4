"""Command line: ``tfstudio [SCRIPT]`` opens the window; ``tfstudio run SCRIPT`` runs headless.

Nothing here imports TensorFlow or Qt at module level, so ``tfstudio --version``
and ``--help`` answer at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tfstudio import __version__

VIEWS = ("metrics", "model", "weights", "gradients", "outputs", "walk")

GUI_EPILOG = """\
script arguments: put them after '--', e.g.  tfstudio train.py --run -- --epochs 3
headless:         tfstudio run SCRIPT [ARGS...]   (see: tfstudio run --help)
"""


def gui_parser() -> argparse.ArgumentParser:
    """Parser for the window's command line."""
    p = argparse.ArgumentParser(
        prog="tfstudio",
        description="Open a TensorFlow/Keras training script and watch it train, live.",
        epilog=GUI_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"tfstudio {__version__}")
    p.add_argument("script", nargs="?", help="training script to open (default: a bundled example)")
    p.add_argument("--run", action="store_true", help="start the script at once")
    p.add_argument(
        "--quit-when-done",
        action="store_true",
        help="exit when the run ends: 0 if it finished, non-zero if it failed or was stopped",
    )
    p.add_argument(
        "--screenshot", metavar="FILE", help="save a PNG of the window when the run ends"
    )
    p.add_argument(
        "--screenshot-at-step",
        metavar="N",
        type=int,
        help="with --screenshot: take it during the run, once step N is shown",
    )
    p.add_argument(
        "--view",
        choices=VIEWS,
        help="which view the window shows: " + ", ".join(VIEWS),
    )
    _add_inspector_flags(p)
    return p


def _add_inspector_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sample-every",
        metavar="N",
        type=int,
        default=0,
        help="inspector: sample weights, gradients and layer outputs every N steps "
        "(default: as often as 3%% of training time allows)",
    )


def headless_parser() -> argparse.ArgumentParser:
    """Parser for ``tfstudio run``."""
    p = argparse.ArgumentParser(
        prog="tfstudio run",
        description="Run a training script without a window: live progress line in the "
        "terminal, the script's own output, exit status of the script.",
    )
    _add_inspector_flags(p)
    p.add_argument("script", help="training script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tfstudio`` command; returns the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        ns = headless_parser().parse_args(argv[1:])
        from tfstudio.core.options import RunOptions
        from tfstudio.headless import run_headless

        return run_headless(ns.script, ns.args, RunOptions(sample_every=ns.sample_every))
    script_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1 :]
    ns = gui_parser().parse_args(argv)
    from tfstudio.app import run_app

    return run_app(
        ns.script,
        script_args,
        run=ns.run,
        quit_when_done=ns.quit_when_done,
        screenshot=ns.screenshot,
        screenshot_at_step=ns.screenshot_at_step,
        view=ns.view,
        sample_every=ns.sample_every,
    )
