"""Command line: ``tfstudio [SCRIPT]`` opens the window; ``tfstudio run SCRIPT`` runs headless.

Nothing here imports TensorFlow or Qt at module level, so ``tfstudio --version``
and ``--help`` answer at once.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping, Sequence

from tfstudio import __version__
from tfstudio.core.options import RunOptions

NAN_EXIT_CODE = 3  # engine/control.py: a run stopped by --on-nan stop exits with this

VIEWS = ("metrics", "model", "weights", "gradients", "outputs", "walk", "system")

GUI_EPILOG = """\
script arguments: put them after '--', e.g.  tfstudio train.py --run -- --epochs 3
headless:         tfstudio run SCRIPT [ARGS...]   (see: tfstudio run --help)
recorded runs:    tfstudio runs [DIR]             tfstudio export RUN --csv FILE
pitfalls:         tfstudio check SCRIPT           (static advisor, no run)
"""

LOGDIR_HELP = (
    "runs directory to record into (default: $TFSTUDIO_LOGDIR if set, else ./tfstudio-runs "
    "beside the script in the window, in the working directory headless; for a bundled "
    "example or a read-only folder, ~/.local/share/tfstudio/runs)"
)


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
    p.add_argument("--logdir", metavar="DIR", help=LOGDIR_HELP)
    p.add_argument("--no-record", action="store_true", help="do not record runs")
    add_control_flags(p, headless=False)

    p.add_argument(
        "--compare",
        metavar="RUN",
        action="append",
        default=[],
        help="a recorded run folder (or any TensorBoard log folder) to draw beside the live "
        "run; repeat for more",
    )
    p.add_argument(
        "--smoothing",
        metavar="W",
        type=float,
        help="EMA smoothing of the per-step curves, 0 (raw) to 0.99 (default: the last used)",
    )
    p.add_argument(
        "--x-axis",
        choices=("step", "fit-step", "relative", "wall", "epoch", "global", "fit"),
        metavar="{step,fit-step,relative,wall,epoch}",
        help="x axis of the metric plots: the run's global step (default: the last used), the "
        "step within each fit with the fits overlaid, seconds since each run started, the "
        "clock time, or epochs",
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
    p.add_argument(
        "--no-inspector",
        action="store_true",
        help="no inspector at all: weights, gradients and layer outputs are never sampled",
    )


def headless_parser() -> argparse.ArgumentParser:
    """Parser for ``tfstudio run``."""
    p = argparse.ArgumentParser(
        prog="tfstudio run",
        description="Run a training script without a window: live progress line in the "
        "terminal, the script's own output, exit status of the script.",
    )
    p.add_argument("--logdir", metavar="DIR", help=LOGDIR_HELP)
    p.add_argument("--no-record", action="store_true", help="do not record the run")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="show TensorFlow's start-up messages as they come (folded into one line "
        "otherwise; the run folder's startup.log keeps them)",
    )
    _add_inspector_flags(p)
    p.add_argument("script", help="training script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    add_control_flags(p, headless=True)
    return p


def runs_parser() -> argparse.ArgumentParser:
    """Parser for ``tfstudio runs``."""
    p = argparse.ArgumentParser(
        prog="tfstudio runs",
        description="List recorded runs, newest first, as a table that compares them: name, "
        "status, steps, each metric's last epoch mean (what Keras prints), the main "
        "validation metric's best and its step (NAME.best, NAME.best_step), the optimizer, "
        "learning rate, batch size, epochs and every hyperparameter that differs, tags, note.",
    )
    p.add_argument(
        "logdir",
        nargs="?",
        help="runs directory (default: $TFSTUDIO_LOGDIR, else ./tfstudio-runs; in a "
        "read-only folder ~/.local/share/tfstudio/runs)",
    )
    p.add_argument(
        "--columns",
        metavar="A,B,...",
        help="columns to print, by title (e.g. Name,loss,val_loss.best,optimizer); 'all' "
        "for every column",
    )
    p.add_argument(
        "--filter",
        metavar="EXPR",
        help="keep the runs that match, e.g. 'val_loss < 0.3 and optimizer == adam' "
        "(OP: < <= > >= == != ~), or text found in a run's name, script, tags or note",
    )
    p.add_argument("--sort", metavar="COL", help="order by this column (numbers as numbers)")
    p.add_argument("--desc", action="store_true", help="with --sort: largest first")
    p.add_argument(
        "--json", action="store_true", help="print JSON: one object per run (for scripts)"
    )
    return p


def export_parser() -> argparse.ArgumentParser:
    """Parser for ``tfstudio export``."""
    p = argparse.ArgumentParser(
        prog="tfstudio export", description="Export a run's scalars (tag,step,value,wall_time)."
    )
    p.add_argument("run", help="run folder (or any TensorBoard log folder)")
    p.add_argument("--csv", metavar="FILE", required=True, help="CSV file to write")
    return p


def _runs_command(argv: list[str]) -> int:
    from tfstudio.core.locations import fs_for, user_data_dir
    from tfstudio.core.runs import USER_RUNS_DIRNAME, list_runs, resolve_logdir

    ns = runs_parser().parse_args(argv)
    logdir = resolve_logdir(ns.logdir, os.getcwd())
    try:
        fs = fs_for(logdir)
        if not fs.isdir(logdir):  # type: ignore[arg-type]
            what = "not a folder" if fs.exists(logdir) else "no such folder"  # type: ignore[arg-type]
            print(f"tfstudio runs: {what}: {logdir}", file=sys.stderr)
            user_runs = user_data_dir() / USER_RUNS_DIRNAME
            if ns.logdir is None and user_runs != logdir and user_runs.is_dir():
                print(
                    f"  (runs of the bundled examples and of scripts in read-only folders are "
                    f"in {user_runs}: tfstudio runs {user_runs})",
                    file=sys.stderr,
                )
            return 2
        runs = list_runs(logdir)
    except OSError as exc:  # an unsupported or unreachable URL
        print(f"tfstudio runs: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print(f"no runs in {logdir}", file=sys.stderr)
        return 1
    return _print_runs(list(reversed(runs)), ns)  # newest first, as the window lists them


def _print_runs(runs: list, ns: argparse.Namespace) -> int:  # list[RunInfo]
    """``tfstudio runs``'s table (or JSON) of these runs, filtered and sorted as asked."""
    from tfstudio.core import run_table as t

    rows = [t.run_row(run) for run in runs]
    columns = t.table_columns(rows)
    try:
        kept = t.parse_filter(ns.filter or "", columns)
    except t.FilterError as exc:
        print(f"tfstudio runs: {exc}", file=sys.stderr)
        return 2
    rows = [r for r in rows if kept.matches(r)]
    if ns.sort:
        by = t.find_column(ns.sort, columns)
        if by is None:
            print(f"tfstudio runs: --sort: no column {ns.sort!r}", file=sys.stderr)
            return 2
        rows = t.sort_rows(rows, by, descending=ns.desc)
    if ns.json:
        print(t.rows_json(rows))
        return 0
    if ns.columns and ns.columns.strip().lower() == "all":
        shown = columns
    elif ns.columns:
        shown = []
        for name in (n.strip() for n in ns.columns.split(",") if n.strip()):
            column = t.find_column(name, columns)
            if column is None:
                known = ", ".join(c.title for c in columns)
                print(f"tfstudio runs: --columns: no column {name!r} ({known})", file=sys.stderr)
                return 2
            shown.append(column)
    else:
        shown = [c for c in columns if t.default_visible(c, rows)]
        shown = [c for c in shown if c.kind != "notes" or any(c.text(r) for r in rows)]
    if not rows:
        print("no runs match the filter", file=sys.stderr)
        return 1
    print(t.format_table(rows, shown))
    return 0


def _export_command(argv: list[str]) -> int:
    ns = export_parser().parse_args(argv)
    try:
        return _export(ns)
    except OSError as exc:  # an unsupported or unreachable URL, an unwritable CSV
        print(f"tfstudio export: {exc}", file=sys.stderr)
        return 2


def _export(ns: argparse.Namespace) -> int:
    from tfstudio.core.runs import export_scalars_csv, is_run_dir

    if not is_run_dir(ns.run):
        print(
            f"tfstudio export: {ns.run} is not a run folder (expected run.json or "
            "events.out.tfevents.* files in it)",
            file=sys.stderr,
        )
        return 2
    rows = export_scalars_csv(ns.run, ns.csv)
    print(f"wrote {rows} rows to {ns.csv}")
    return 0


def _check_command(argv: list[str]) -> int:
    from pathlib import Path

    from tfstudio.core.advisor import check_text, syntax_error

    p = argparse.ArgumentParser(
        prog="tfstudio check",
        description="Name the TensorFlow pitfalls a script falls into (static rules; no "
        "TensorFlow needed). Exit 0 when clean, 1 when something was found, 2 for a bad "
        "path or a script that does not parse (its file:line: SyntaxError).",
    )
    p.add_argument("scripts", nargs="+", metavar="SCRIPT", help="training script(s) to check")
    ns = p.parse_args(argv)
    found = 0
    unreadable = 0
    for script in ns.scripts:
        if not Path(script).is_file():
            print(
                f"tfstudio check: {script}: no such file (expected a Python script)",
                file=sys.stderr,
            )
            return 2
        try:
            source = Path(script).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            print(f"tfstudio check: {script}: cannot read it: {exc}", file=sys.stderr)
            unreadable += 1
            continue
        error = syntax_error(source, script)
        if error is not None:  # nothing to check: say so, as Python would on running it
            print(error, file=sys.stderr)
            unreadable += 1
            continue
        for f in check_text(source, script):
            found += 1
            print(f"{f.location()}: [{f.rule}] {f.title}\n    {f.message}\n    fix: {f.fix}")
    if unreadable:
        return 2
    if not found:
        print(f"tfstudio check: no pitfalls found in {', '.join(ns.scripts)}")
    return 1 if found else 0


def add_control_flags(p: argparse.ArgumentParser, headless: bool) -> None:
    """The run-control flags, the same for the window and ``tfstudio run``."""
    g = p.add_argument_group("run controls (put them before the script in 'tfstudio run')")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument(
        "--eager", dest="eager", action="store_true", default=None, help="run every fit eagerly"
    )
    mode.add_argument(
        "--graph", dest="eager", action="store_false", help="run every fit as a graph"
    )
    g.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                   help="save a checkpoint every N steps")  # fmt: skip
    g.add_argument("--checkpoint-minutes", type=float, default=0.0, metavar="M",
                   help="save a checkpoint every M minutes")  # fmt: skip
    g.add_argument(
        "--checkpoint-dir",
        metavar="DIR",
        help="checkpoint folder (default: checkpoints/ in the run's folder, <runs "
        "directory>/<run>/checkpoints; with --no-record, tfstudio-checkpoints/<script>-<time>/ "
        "beside the script, or in ~/.local/share/tfstudio/checkpoints/ for a bundled example "
        "or a read-only folder)",
    )
    g.add_argument("--max-to-keep", type=int, default=5, metavar="K",
                   help="checkpoints kept (default 5)")  # fmt: skip
    g.add_argument("--keep-every-hours", type=float, default=None, metavar="H",
                   help="also keep one checkpoint per H hours")  # fmt: skip
    g.add_argument(
        "--restore",
        metavar="PATH",
        help="start from a checkpoint: a prefix (.../ckpt-7) or a folder (its latest)",
    )
    g.add_argument("--lr", type=float, default=None, metavar="VALUE",
                   help="set the learning rate before the first step")  # fmt: skip
    g.add_argument("--stop-at-step", type=int, default=None, metavar="N",
                   help="end training after exactly N steps")  # fmt: skip
    if headless:
        g.add_argument(
            "--on-nan",
            choices=("stop", "ignore"),
            default="stop",
            help=f"when a step's loss is NaN/Inf: stop (default; exit code {NAN_EXIT_CODE}) "
            "or ignore",
        )
    else:
        g.add_argument(
            "--on-nan",
            choices=("pause", "stop", "ignore"),
            default="pause",
            help="when a step's loss is NaN/Inf: pause (default), stop or ignore",
        )
    g.add_argument(
        "--nan-batch",
        action="store_true",
        help="in graph mode, keep each step's batch aside, so that the first NaN/Inf loss "
        "is recomputed on its own batch (costs ~10-25 us a step; by default batches are "
        "kept only after a first NaN)",
    )


def run_options(ns: argparse.Namespace) -> RunOptions:
    """The run settings named on a command line (window and headless take the same flags)."""
    return RunOptions(
        logdir=ns.logdir,
        record=not ns.no_record,
        inspector=not ns.no_inspector,
        sample_every=ns.sample_every,
        eager=ns.eager,
        checkpoint_every=ns.checkpoint_every,
        checkpoint_minutes=ns.checkpoint_minutes,
        checkpoint_dir=ns.checkpoint_dir,
        max_to_keep=ns.max_to_keep,
        keep_checkpoint_every_n_hours=ns.keep_every_hours,
        restore=ns.restore,
        lr=ns.lr,
        stop_at_step=ns.stop_at_step,
        on_nan=ns.on_nan,
        nan_batch=ns.nan_batch,
    )


NO_DISPLAY_EXIT_CODE = 2


X11_SOCKETS = "/tmp/.X11-unix"  # where a local X server's display :N listens (XN)
_LOCAL_DISPLAY = re.compile(r"^(?:unix)?:(\d+)(?:\.\d+)?$")


def _no_local_x_server(display: str, sockets: str) -> bool:
    """True when ``display`` is a local one (``:N``) and no X server listens for it: no
    ``XN`` socket file, nor the abstract socket Linux servers also open."""
    m = _LOCAL_DISPLAY.match(display)
    if m is None:  # host:N (ssh -X), a launchd path...: not ours to judge
        return False
    name = f"X{m.group(1)}"
    if os.path.exists(os.path.join(sockets, name)):
        return False
    try:
        with open("/proc/net/unix", encoding="ascii", errors="replace") as f:
            abstract = f"@{X11_SOCKETS}/{name}"
            return not any(line.rstrip().endswith(abstract) for line in f)
    except OSError:
        return False  # cannot tell: let Qt try


def display_problem(
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
    x11_sockets: str = X11_SOCKETS,
) -> str | None:
    """Why the window cannot open here, in words; None when it can (or we cannot tell).

    On Linux, Qt's default platform (``xcb``, or Wayland when a compositor is named)
    needs ``DISPLAY`` or ``WAYLAND_DISPLAY``, and a local ``DISPLAY=:N`` an X server
    listening on it; without them Qt aborts the process (exit 134, "could not load the
    Qt platform plugin"). Checked before Qt is imported.
    """
    env = os.environ if environ is None else environ
    if not (platform or sys.platform).startswith("linux"):
        return None
    wanted = [
        name.split(":", 1)[0].strip()
        for name in env.get("QT_QPA_PLATFORM", "").split(";")
        if name.strip()
    ]
    display = env.get("DISPLAY", "")
    if not wanted:  # Qt's default: X11, or Wayland when a compositor is named
        if env.get("WAYLAND_DISPLAY"):
            return None
        missing = "neither DISPLAY nor WAYLAND_DISPLAY is set"
    elif all(name == "xcb" for name in wanted):
        missing = "QT_QPA_PLATFORM=xcb and DISPLAY is not set"
    else:
        return None  # offscreen, wayland, vnc...: Qt says what is wrong itself
    if display:
        if not _no_local_x_server(display, x11_sockets):
            return None
        missing = f"DISPLAY={display}, but no X server listens on it"
    return (
        f"tfstudio: no display to open the window on ({missing}).\n"
        "  - on a desktop: set DISPLAY to its X display (e.g. DISPLAY=:0), or start "
        "tfstudio from a terminal of that desktop; over ssh: ssh -X\n"
        "  - without a display, run the script headless: tfstudio run SCRIPT [ARGS...]\n"
        "  - or draw the window off screen (e.g. for --screenshot): "
        "QT_QPA_PLATFORM=offscreen tfstudio ...\n"
    )


def misplaced_options(parser: argparse.ArgumentParser, script: str, args: list[str]) -> list[str]:
    """A note for each of tfstudio's own options given after the script (where they go to the
    script, as ``python script.py ...`` would pass them): ``-h`` is left to the script."""
    own = {o: a for o, a in parser._option_string_actions.items() if o.startswith("--")}
    own.pop("--help", None)
    notes = []
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in own:
            takes = own[name].nargs != 0 and "=" not in arg and i + 1 < len(args)
            value = [args[i + 1]] if takes else []
            moved = " ".join([arg, *value, os.path.basename(script)])
            notes.append(
                f"tfstudio: note: {name} comes after the script, so it goes to the script, "
                f"not to tfstudio; tfstudio's own options come first: tfstudio run {moved}"
            )
    return notes


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tfstudio`` command; returns the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        parser = headless_parser()
        ns = parser.parse_args(argv[1:])
        for note in misplaced_options(parser, ns.script, ns.args):
            sys.stderr.write(note + "\n")
        from tfstudio.headless import run_headless

        return run_headless(ns.script, ns.args, run_options(ns), verbose=ns.verbose)
    if argv and argv[0] == "runs":
        return _runs_command(argv[1:])
    if argv and argv[0] == "export":
        return _export_command(argv[1:])
    if argv and argv[0] == "check":
        return _check_command(argv[1:])
    script_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1 :]
    parser = gui_parser()
    ns, extra = parser.parse_known_args(argv)
    if extra:  # the script's own arguments, given without "--" (headless takes them so)
        script = ns.script or "train.py"
        parser.error(
            f"unrecognized arguments: {' '.join(extra)}; the script's own arguments go "
            f"after --: tfstudio {script} -- {' '.join(extra)}"
        )
    problem = display_problem()
    if problem:  # before Qt is loaded: it would abort the process
        sys.stderr.write(problem)
        return NO_DISPLAY_EXIT_CODE
    from tfstudio.app import run_app

    return run_app(
        ns.script,
        script_args,
        run=ns.run,
        quit_when_done=ns.quit_when_done,
        screenshot=ns.screenshot,
        screenshot_at_step=ns.screenshot_at_step,
        options=run_options(ns),
        x_axis=ns.x_axis,
        view=ns.view,
        sample_every=ns.sample_every,
        compare=ns.compare,
        smoothing=ns.smoothing,
    )
