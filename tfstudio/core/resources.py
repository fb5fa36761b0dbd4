"""Where the bundled resources (example scripts, icons) live.

In a wheel they ship as ``tfstudio/resources``; in a source checkout they are
the top-level ``resources/`` folder beside the package.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_EXAMPLE = "mlp_classifier.py"


def resources_dir() -> Path:
    """The folder holding ``examples/`` and other bundled files."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "resources", package.parent / "resources"):
        if (candidate / "examples").is_dir():
            return candidate
    raise FileNotFoundError(
        f"tfstudio's bundled resources are missing: looked in {package / 'resources'} "
        f"and {package.parent / 'resources'}"
    )


def examples() -> list[Path]:
    """The bundled example scripts, sorted by name."""
    return sorted((resources_dir() / "examples").glob("*.py"))


def default_example() -> Path:
    """The example the window opens when started without a script."""
    return resources_dir() / "examples" / DEFAULT_EXAMPLE
