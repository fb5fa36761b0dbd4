"""Run a user's script file unmodified, as ``python script.py`` would.

The script runs as ``__main__`` with ``sys.argv[0]`` set to it and its folder
first on ``sys.path``. Process-wide state changed for the run (argv, path,
``__main__``, working directory, stdin, matplotlib backend) is restored after.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import traceback
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tfstudio.core.events import ScriptError

# Frames of the engine itself are left out of tracebacks shown to the user.
_ENGINE_DIR = str(Path(__file__).resolve().parent)

NO_INPUT_MESSAGE = (
    "input() has no terminal to read from: tfstudio runs the script without standard "
    "input (end of file). Pass values as script arguments instead."
)


class RunStopped(BaseException):
    """Raised in the script's thread to skip the rest of it after the user pressed Stop.

    A BaseException, so a script's ``except Exception`` cannot swallow it.
    """


def _no_input(prompt: object = "") -> str:
    if prompt:
        sys.stdout.write(str(prompt))
    raise EOFError(NO_INPUT_MESSAGE)


@contextmanager
def script_environment(
    path: Path, args: Sequence[str], cwd: Path | None, stdin_eof: bool
) -> Iterator[types.ModuleType]:
    """Set up argv, sys.path, ``__main__``, cwd and stdin for one run; undo it after.

    Yields the fresh ``__main__`` module the script runs in.
    """
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    if stdin_eof:
        # input() in the script itself gets a clear message; anything else reading
        # stdin sees end of file.
        own = dict(vars(builtins))
        own["input"] = _no_input
        module.__builtins__ = own  # type: ignore[attr-defined]
    saved_argv = sys.argv
    saved_main = sys.modules.get("__main__")
    saved_cwd = os.getcwd()
    saved_stdin = sys.stdin
    saved_mpl = os.environ.get("MPLBACKEND")
    before = set(sys.modules)
    folder = str(path.parent)
    sys.argv = [str(path), *args]
    sys.path.insert(0, folder)
    sys.modules["__main__"] = module
    # plt.show() must not block a run: a non-interactive backend.
    os.environ["MPLBACKEND"] = "Agg"
    _use_agg_if_loaded()
    if stdin_eof:
        sys.stdin = io.StringIO("")
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield module
    finally:
        sys.argv = saved_argv
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        sys.stdin = saved_stdin
        if saved_mpl is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = saved_mpl
        os.chdir(saved_cwd)
        _forget_local_modules(folder, before)


def _use_agg_if_loaded() -> None:
    if "matplotlib.pyplot" in sys.modules:
        try:
            sys.modules["matplotlib.pyplot"].switch_backend("Agg")
        except Exception:  # noqa: BLE001 - a broken matplotlib is the script's concern
            pass


def _forget_local_modules(folder: str, before: set[str]) -> None:
    """Drop modules the script imported from its own folder, so edits apply next run."""
    prefix = os.path.join(folder, "")
    for name in set(sys.modules) - before:
        mod = sys.modules.get(name)
        file = getattr(mod, "__file__", None) or ""
        if file.startswith(prefix):
            del sys.modules[name]


def execute(path: Path, module: types.ModuleType) -> None:
    """Compile and run the script's source in ``module``'s namespace.

    Raises whatever the script raises (SyntaxError included).
    """
    source = path.read_bytes()
    code = compile(source, str(path), "exec", dont_inherit=True)
    namespace: dict[str, Any] = module.__dict__
    exec(code, namespace)


def describe_error(exc: BaseException, script: Path) -> ScriptError:
    """Summarise an exception from the user's script, located at its file:line.

    The location is the innermost frame in the script itself (or, for a syntax
    error, the offending line); tfstudio's own frames are left out of the text.
    """
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_ENGINE_DIR)
    ]
    filename, lineno = "", 0
    if isinstance(exc, SyntaxError) and exc.filename:
        filename, lineno = exc.filename, exc.lineno or 0
    else:
        in_script = [f for f in frames if _same_file(f.filename, script)]
        chosen = in_script[-1] if in_script else (frames[-1] if frames else None)
        if chosen is not None:
            filename, lineno = chosen.filename, chosen.lineno or 0
    text = format_error(exc, frames)
    message = str(exc) if not isinstance(exc, SyntaxError) else (exc.msg or str(exc))
    return ScriptError(type(exc).__name__, message, filename, lineno, text)


def format_error(exc: BaseException, frames: list[traceback.FrameSummary]) -> str:
    """Traceback text with the given frames and the exception (chained causes kept)."""
    parts: list[str] = []
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    if cause is not None and cause.__traceback__ is not None:
        cause_frames = [
            f
            for f in traceback.extract_tb(cause.__traceback__)
            if not f.filename.startswith(_ENGINE_DIR)
        ]
        parts.append(format_error(cause, cause_frames))
        parts.append(
            "\nThe above exception was the direct cause of the following exception:\n\n"
            if exc.__cause__ is not None
            else "\nDuring handling of the above exception, another exception occurred:\n\n"
        )
    if frames:
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_list(frames))
    parts.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(parts)


def _same_file(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b
    except OSError:
        return False


def exit_code_of(exc: SystemExit) -> tuple[int, str]:
    """What ``python script.py`` would exit with for ``sys.exit(arg)``, and its message."""
    code = exc.code
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code, ""
    return 1, str(code)
