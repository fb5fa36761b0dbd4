"""Time from launching ``tfstudio`` to its window shown on an X display.

Each round starts ``tfstudio [SCRIPT]`` (no script: the bundled example, as a new user
does) as a fresh process and times it from ``subprocess.Popen`` to the end of the
window's first paint: the first ``Expose`` of its top-level window, plus the paint Qt
does for it (a zero-delay timer queued behind it). The process runs under a small
probe (``-c`` code below) that installs that event filter and then calls
``tfstudio.cli.main`` as the ``tfstudio`` command does: nothing in tfstudio is changed
for the measurement, so two checkouts compare (``--tree``). A fresh settings and data
folder each round (a first launch). The window, its spare worker and whatever it
started are ended after each round, and the next round waits for them.

Bytecode: an installed tfstudio has its ``.pyc`` files (pip compiles them), so the
launched processes keep theirs in a folder of the bench's own
(``PYTHONPYCACHEPREFIX``, even where ``PYTHONDONTWRITEBYTECODE`` is set) and a first,
uncounted round writes them (``--cold`` counts every round, compiling each time).

Needs an X server: ``DISPLAY`` if set, else an Xvfb of its own (``Xvfb`` on PATH).

    python bench/launch.py [--rounds 5] [--tree DIR] [--script FILE]
    python bench/launch.py --against OTHER_CHECKOUT    # rounds interleaved, both medians
    python bench/launch.py --rounds 1 --profile launch.prof   # cProfile up to the paint
    python bench/launch.py --rounds 1 --importtime imports.txt # python -X importtime

Ends with one line: ``launch: to a visible window median S s (min A, max B, N rounds)``
(with ``--against``: ``... median S s, OTHER: median T s (...)``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 120.0

# Runs in the launched process: marks the first paint of the first top-level window,
# then hands over to tfstudio's own command line.
PROBE = r"""
import os, sys, time
profile = os.environ.get("LAUNCH_PROFILE")
if profile:
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QWindow
from PySide6.QtWidgets import QApplication

class FirstPaint(QObject):
    done = False

    def eventFilter(self, obj, event):
        if (not self.done and event.type() == QEvent.Type.Expose
                and isinstance(obj, QWindow) and obj.isExposed()):
            self.done = True
            QTimer.singleShot(0, self.report)  # after the paint this expose brings
        return False

    def report(self):
        now = time.time()
        if profile:
            prof.disable()
            prof.dump_stats(profile)
        sys.stdout.write(f"shown {now!r}\n")
        sys.stdout.flush()

app = QApplication(sys.argv[:1])
probe = FirstPaint()
app.installEventFilter(probe)
from tfstudio.cli import main
sys.argv = ["tfstudio", *sys.argv[1:]]
sys.exit(main())
"""


def start_xvfb() -> tuple[subprocess.Popen, str]:
    """An Xvfb on the first free display number from :58 (its process, ``:N``)."""
    exe = shutil.which("Xvfb")
    if exe is None:
        raise SystemExit("launch: no DISPLAY and no Xvfb on PATH")
    for n in range(58, 90):
        if Path(f"/tmp/.X11-unix/X{n}").exists() or Path(f"/tmp/.X{n}-lock").exists():
            continue
        proc = subprocess.Popen(
            [exe, f":{n}", "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if Path(f"/tmp/.X11-unix/X{n}").exists():
                return proc, f":{n}"
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    raise SystemExit("launch: could not start Xvfb")


def end_tree(proc: subprocess.Popen) -> None:
    """End the launched process and every process it started (the spare worker too)."""
    import psutil

    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    proc.kill()
    proc.wait()
    for child in family:
        try:
            child.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(family, timeout=10)


def one_round(
    tree: Path,
    script: str | None,
    display: str,
    pycache: str | None,
    profile: str | None = None,
    importtime: str | None = None,
) -> float:
    """Seconds from Popen to the window's first paint."""
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb")
        if pycache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
        env["XDG_CONFIG_HOME"] = str(Path(home) / "config")  # a first launch
        env["XDG_DATA_HOME"] = str(Path(home) / "data")
        env.pop("TFSTUDIO_LOGDIR", None)
        if profile:
            env["LAUNCH_PROFILE"] = str(Path(profile).resolve())
        cmd = [sys.executable]
        if importtime:
            cmd += ["-X", "importtime"]
        cmd += ["-c", PROBE, *([script] if script else [])]
        stderr = open(importtime, "w") if importtime else subprocess.DEVNULL  # noqa: SIM115
        try:
            t0 = time.time()
            proc = subprocess.Popen(
                cmd, cwd=home, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
            )
            try:
                line = proc.stdout.readline() if proc.stdout else ""
                if not line.startswith("shown "):
                    raise SystemExit(f"launch: the window never showed (exit {proc.poll()})")
                return float(line.split()[1]) - t0
            finally:
                end_tree(proc)
        finally:
            if importtime:
                stderr.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", default=str(ROOT), help="checkout whose tfstudio to launch")
    parser.add_argument(
        "--against", metavar="DIR", help="another checkout, launched in alternate rounds"
    )
    parser.add_argument("--script", help="script to open (default: the bundled example)")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between rounds")
    parser.add_argument("--profile", metavar="FILE", help="cProfile stats of the last round")
    parser.add_argument("--importtime", metavar="FILE", help="-X importtime of the last round")
    parser.add_argument("--cold", action="store_true", help="no .pyc kept between rounds")
    args = parser.parse_args()
    trees = [Path(args.tree).resolve()]
    if args.against:
        trees.append(Path(args.against).resolve())
    pycache = None if args.cold else tempfile.mkdtemp(prefix="tfstudio-launch-pyc-")
    xvfb = None
    display = os.environ.get("DISPLAY")
    if not display:
        xvfb, display = start_xvfb()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    times: dict[Path, list[float]] = {tree: [] for tree in trees}
    try:
        if pycache:
            for tree in trees:
                warm = one_round(tree, args.script, display, pycache)
                print(f"warm-up round of {tree} (writes .pyc): {warm:.2f} s", file=sys.stderr)
                time.sleep(args.pause)
        for i in range(args.rounds):
            last = i == args.rounds - 1
            # alternate which tree goes first: neither always follows the other's round
            for tree in trees if i % 2 == 0 else trees[::-1]:
                t = one_round(
                    tree,
                    args.script,
                    display,
                    pycache,
                    args.profile if last and tree == trees[0] else None,
                    args.importtime if last and tree == trees[0] else None,
                )
                times[tree].append(t)
                print(f"round {i + 1} {tree}: {t:.2f} s", file=sys.stderr, flush=True)
                time.sleep(args.pause)
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()
        if pycache:
            shutil.rmtree(pycache, ignore_errors=True)
    load = os.getloadavg()[0]
    parts = []
    for tree, ts in times.items():
        name = "" if tree == trees[0] else f"{tree}: "
        parts.append(
            f"{name}median {statistics.median(ts):.2f} s "
            f"(min {min(ts):.2f}, max {max(ts):.2f}, {len(ts)} rounds)"
        )
    print(
        f"launch: to a visible window {', '.join(parts)}; {os.cpu_count()} cpus, "
        f"load {load:.1f}{', cold' if args.cold else ''}"
    )


if __name__ == "__main__":
    main()
