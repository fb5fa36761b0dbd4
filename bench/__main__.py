"""tfstudio's benchmarks: list them, run one, or run every one that needs no GPU briefly.

    python -m bench                  # the table: name, question, command, the line it ends with
    python -m bench NAME [ARGS...]   # run one (ARGS go to its script; --help shows them)
    python -m bench all              # every benchmark that needs no GPU, in a short setting,
                                     # printing each one's final line (~10 min on 2 busy cores)

Run from the repository root: the checkout's ``tfstudio`` is put first on the path, so
the benchmarks measure this tree and not an installed copy. Windows are offscreen
(``QT_QPA_PLATFORM=offscreen`` unless set). The figures and their targets are in
docs/benchmarks.md; the short settings of ``all`` check that each benchmark runs, their
figures are too noisy to compare with a target.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Bench:
    """One benchmark: its script in bench/, what it answers and how it ends."""

    name: str  # its script is bench/NAME.py
    question: str
    ends: str
    short: tuple[str, ...] = ()  # the arguments of ``all``'s short setting
    gpu: bool = False  # needs an NVIDIA GPU (``all`` leaves it out)

    @property
    def script(self) -> str:
        """Its file in bench/."""
        return f"{self.name}.py"

    @property
    def command(self) -> str:
        """The command that gives the figure in docs/benchmarks.md."""
        return f"python -m bench {self.name}"


BENCHES = (
    Bench(
        "overhead",
        "What does monitoring cost a model.fit? (bare steps/s over monitored)",
        "overhead: monitored/bare = R",
        ("--blocks", "1", "--rounds", "200", "--alone", "200"),
    ),
    Bench(
        "inspector_overhead",
        "What does the inspector add, its own share of a fit, and against TensorBoard?",
        "overhead: monitored/bare = R",
        ("--blocks", "1", "--rounds", "200", "--alone", "200", "--every", "20"),
    ),
    Bench(
        "loop_overhead",
        "What does monitoring cost a custom GradientTape loop (tf.function and eager)?",
        "overhead: monitored/bare = R",
        ("--steps", "200", "--traces", "2", "--eager-steps", "20"),
    ),
    Bench(
        "window_overhead",
        "Does watching in the window slow training? (worker CPU per step, window/headless)",
        "window: worker cpu per step window/headless = R (redraws X/s)",
        ("--rounds", "1"),
    ),
    Bench(
        "window_interleaved",
        "The window's redraws' cost to training, phases with and without them in one run",
        "window: worker cpu per step redrawing/not = R (redraws X/s)",
        ("--steps", "4000", "--phase", "0.5"),
    ),
    Bench(
        "latency",
        "How long from a step's batch hook in the worker to the redraw that shows it?",
        "latency: step to pixel median ms = X, p99 = Y",
        ("--steps", "1000"),
    ),
    Bench(
        "launch",
        "How long from launching tfstudio to its window shown? (X display, or its own Xvfb)",
        "launch: to a visible window median S s (min A, max B, N rounds)",
        ("--rounds", "1"),
    ),
    Bench(
        "start",
        "How long from Run to the script's first line, warm spare and cold worker?",
        "start: run to first line s = W (warm), C (cold)",
        ("--rounds", "1"),
    ),
    Bench(
        "ui_ingest",
        "Does the window keep up with 1k-100k steps/s, nothing dropped, memory flat?",
        "ui: median frame ms = X, p99 = Y, dropped = D at 10000 steps/s",
        ("--seconds", "1", "--total", "50000", "--compare", "1", "--compare-steps", "10000"),
    ),
    Bench(
        "logdir",
        "How fast are big log folders read, against TensorBoard; a 10M-step run's memory?",
        "logdir: 10M-step run in the window MB = M",
        ("--quick", "--skip-tensorboard"),
    ),
    Bench(
        "soak",
        "Do kills, many runs and 10M fast steps leave memory flat and data restorable?",
        "soak: ... (four lines: window RSS growth, worker RSS, kill rounds, bit-exact)",
        ("--rounds", "1", "--window-runs", "2", "--worker-steps", "100000", "--no-bit-exact"),
    ),
    Bench(
        "stop_time",
        "How long from Stop to the run's end: in a fit, asleep, ignoring SIGINT?",
        "stop: ignores SIGINT: press -> run ended median S s (...)",
        ("--runs", "1", "--grace", "1", "--stage", "1"),
    ),
    Bench(
        "window_stress",
        "Does the window ever hang with runs in a row, views switched and runs picked?",
        "window_stress: R runs, V view switches, P picks, longest GUI pause M ms, stalls S",
        ("--runs", "2", "--steps", "50"),
    ),
    Bench(
        "gpu_check",
        "Does every GPU path work (NVML, TF memory, mixed precision, XLA, mirrored)?",
        "gpu: K/N checks hold (no GPU: gpu: no NVIDIA GPU: skipped)",
        gpu=True,
    ),
)


def table(width: int) -> str:
    """The benchmarks as a text table wrapped to ``width`` columns."""
    heads = ("name", "question", "command", "ends with")
    rows = [(b.name, b.question, b.command, b.ends) for b in BENCHES]
    first = max(len(b.name) for b in BENCHES)
    third = max(len(b.command) for b in BENCHES)
    rest = max(width - first - third - 6, 40)
    widths = (first, rest // 2, third, rest - rest // 2)
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        cells = [textwrap.wrap(text, w) or [""] for text, w in zip(row, widths, strict=True)]
        for i in range(max(len(c) for c in cells)):
            parts = [
                (c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True)
            ]
            lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def environment() -> dict[str, str]:
    """The benchmarks' environment: this checkout first on the path, windows offscreen."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def script_of(name: str) -> Path | None:
    """bench/NAME.py, if it is there (listed or not: an investigation runs the same way)."""
    path = HERE / f"{name.removesuffix('.py')}.py"
    return path if path.is_file() and path.name != "__main__.py" else None


def run_one(name: str, args: list[str]) -> int:
    """Run one benchmark with its output on this terminal; its exit status."""
    script = script_of(name)
    if script is None:
        print(f"bench: no benchmark {name!r} here (python -m bench lists them)", file=sys.stderr)
        return 2
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=ROOT, env=environment()
    ).returncode


def run_all(timeout_s: float) -> int:
    """Every benchmark that needs no GPU in its short setting; each one's final line."""
    failed = []
    for bench in BENCHES:
        if bench.gpu:
            print(f"{bench.name}: left out (needs a GPU: python -m bench {bench.name})")
            continue
        script = script_of(bench.name)
        if script is None:
            print(f"{bench.name}: not in this tree (bench/{bench.script})")
            continue
        print(f"{bench.name}: python bench/{bench.script} {' '.join(bench.short)}", flush=True)
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, str(script), *bench.short],
                cwd=ROOT,
                env=environment(),
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            failed.append(bench.name)
            print(f"  FAILED: still running after {timeout_s:.0f} s", flush=True)
            continue
        took = time.perf_counter() - started
        out = [line for line in done.stdout.splitlines() if line.strip()]
        if done.returncode != 0 or not out:
            failed.append(bench.name)
            tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-8:]
            print(f"  FAILED (exit {done.returncode}, {took:.0f} s):", flush=True)
            print(textwrap.indent("\n".join(tail), "    "), flush=True)
            continue
        print(f"  {out[-1]}   [{took:.0f} s]", flush=True)
    ran = sum(not b.gpu for b in BENCHES)
    print(
        f"bench all: {ran - len(failed)}/{ran} ran"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    """``python -m bench [NAME|all] [ARGS...]``."""
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(
            __doc__.split("\n\n")[0] if argv else "tfstudio's benchmarks (python -m bench --help):"
        )
        print(table(max(shutil.get_terminal_size((140, 40)).columns, 100)))
        print("\nThe figures, their targets and how they are measured: docs/benchmarks.md")
        return 0
    if argv[0] == "all":
        timeout = float(argv[2]) if argv[1:2] == ["--timeout"] and len(argv) > 2 else 900.0
        return run_all(timeout)
    return run_one(argv[0], argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
