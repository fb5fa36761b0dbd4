"""Static advisor rules: each fires on its trigger script at the marked lines, never on its twin."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfstudio.core.advisor import RULES, STATIC_RULES, check_source, check_text

HERE = Path(__file__).parent / "scripts"
ROOT = Path(__file__).resolve().parents[2]
TRIGGERS = sorted(p for p in HERE.glob("r*.py") if not p.stem.endswith("_clean"))
EXPECT = re.compile(r"#\s*expect:\s*([\w-]+)")


def expected(path: Path) -> set[tuple[str, int]]:
    """(rule, line) pairs marked ``# expect: rule`` in a trigger script."""
    out = set()
    for n, text in enumerate(path.read_text().splitlines(), 1):
        m = EXPECT.search(text)
        if m:
            out.add((m.group(1), n))
    return out


@pytest.mark.parametrize("path", TRIGGERS, ids=lambda p: p.stem)
def test_rule_fires_on_the_marked_lines(path: Path) -> None:
    want = expected(path)
    assert want, f"{path} marks no expected finding"
    got = {(f.rule, f.line) for f in check_source(path)}
    assert got == want
    for f in check_source(path):
        assert f.file == str(path) and f.title and f.fix and f.message


@pytest.mark.parametrize("path", TRIGGERS, ids=lambda p: p.stem)
def test_clean_twin_is_silent(path: Path) -> None:
    twin = path.with_name(path.stem + "_clean.py")
    assert twin.exists(), f"{path.name} has no clean twin"
    assert check_source(twin) == []


def test_every_static_rule_has_a_trigger_script() -> None:
    fired = {rule for p in TRIGGERS for rule, _ in expected(p)}
    assert fired == {r.name for r in STATIC_RULES}


CORRECT_SCRIPTS = sorted(
    [*(ROOT / "resources" / "examples").glob("*.py"), *(ROOT / "tests" / "scripts").glob("*.py")]
)


@pytest.mark.parametrize("path", CORRECT_SCRIPTS, ids=lambda p: p.name)
def test_no_false_alarm_on_correct_scripts(path: Path) -> None:
    assert check_source(path) == []


# Test scripts that show a pitfall on purpose: the rule the advisor must name there.
DELIBERATE = {
    ("test_controls.py", "PRINTS"): {"trace-side-effect"},
    # a layer that cannot be traced on purpose: the probe must fall back to eager passes
    ("test_inspector.py", "PROBE_WRITES"): {"tensor-as-python"},
}


def test_string_scripts_in_the_test_suite_raise_no_alarm() -> None:
    """Scripts written as strings in tests: silent, but where a test shows a pitfall on purpose."""
    scripts = []
    for test in (ROOT / "tests").rglob("test_*.py"):
        if "advisor" in test.relative_to(ROOT).parts:
            continue
        tree = ast.parse(test.read_text())
        names = {
            id(n.value): n.targets[0].id
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if (
                "\n" in node.value
                and "import" in node.value
                and ("tensorflow" in node.value or "keras" in node.value)
            ):
                text = textwrap.dedent(node.value)
                try:
                    ast.parse(text)
                except SyntaxError:  # a template with placeholders
                    continue
                scripts.append(((test.name, names.get(id(node), str(node.lineno))), text))
    assert len(scripts) > 10
    for key, text in scripts:
        rules = {f.rule for f in check_text(text, key[0])}
        assert rules == DELIBERATE.get(key, set()), key


def test_rule_names_are_unique_and_documented() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    guide = (ROOT / "docs" / "advisor.md").read_text()
    for name in names:
        assert f"`{name}`" in guide, f"docs/advisor.md does not list rule {name}"


def test_unparsable_script_gives_nothing() -> None:
    assert check_text("def broken(:\n", "x.py") == []


def test_eager_scripts_are_not_warned_about_graph_only_pitfalls() -> None:
    src = (
        HERE / "r4_python_state.py"
    ).read_text() + "\nm = Counting()\nm.compile(run_eagerly=True)\n"
    assert check_text(src) == []


def test_check_command(tmp_path: Path) -> None:
    """``tfstudio check``: linter lines, exit 1 on findings, 0 when clean, 2 for a bad path."""
    trigger = HERE / "r5_shuffle_split.py"

    def check(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tfstudio", "check", str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )

    r = check(trigger)
    assert r.returncode == 1, r.stderr
    assert f"{trigger}:4: [shuffle-split]" in r.stdout
    assert "reshuffle_each_iteration=False" in r.stdout
    r = check(HERE / "r5_shuffle_split_clean.py")
    assert r.returncode == 0 and "no pitfalls" in r.stdout
    r = check(tmp_path / "missing.py")
    assert r.returncode == 2 and "missing.py" in r.stderr


def test_a_subclass_in_an_eager_custom_loop_is_not_called_traced() -> None:
    """No fit/evaluate/predict: call runs eagerly; only the py_function map is named."""
    found = check_source(HERE / "eager_loop.py")
    assert [(f.rule, f.line) for f in found] == [("py-function-in-map", 27)]


# -- trace-side-effect fires only where the code is traced, and says what traces it -------
# the start of scripts the static advisor reads, never runs (a file: no test imports TF)
NOISY_LAYER = (HERE / "noisy_layer.txt").read_text()


def _side_effects(src: str) -> list[tuple[int, str]]:
    return [(f.line, f.message) for f in check_text(src) if f.rule == "trace-side-effect"]


def test_a_layer_only_called_eagerly_is_not_called_traced() -> None:
    src = NOISY_LAYER + (
        "layer = Noisy()\n"
        "print(layer(tf.ones((2, 4))))\n"  # eager: its print runs every call
        "model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
        "model.compile('sgd', 'mse')\n"
        "model.fit(tf.ones((8, 4)), tf.ones((8, 1)), verbose=0)\n"  # another model is fitted
    )
    assert _side_effects(src) == []


def test_the_same_layer_in_a_fitted_model_is_named_with_its_fit() -> None:
    src = NOISY_LAYER + (
        "model = keras.Sequential([keras.Input((4,)), Noisy(), keras.layers.Dense(1)])\n"
        "model.compile('sgd', 'mse')\n"
        "model.fit(tf.ones((8, 4)), tf.ones((8, 1)), verbose=0)\n"
    )
    ((line, message),) = _side_effects(src)
    assert line == 8
    assert message.endswith(
        "(Noisy.call is traced: model.fit() at line 13 compiles it into a graph)."
    )


def test_a_layer_reached_through_a_builder_a_functional_graph_and_a_parameter() -> None:
    src = NOISY_LAYER + (
        "def build():\n"
        "    inputs = keras.Input((4,))\n"
        "    hidden = Noisy()(inputs)\n"
        "    return keras.Model(inputs, keras.layers.Dense(1)(hidden))\n"
        "\n"
        "def train(net):\n"
        "    net.compile('sgd', 'mse')\n"
        "    net.fit(tf.ones((8, 4)), tf.ones((8, 1)), verbose=0)\n"
        "\n"
        "train(build())\n"
    )
    ((line, message),) = _side_effects(src)
    assert line == 8 and "(Noisy.call is traced: net.fit() at line 18 compiles" in message


def test_a_print_in_a_tf_function_names_the_function() -> None:
    src = NOISY_LAYER + (
        "layer = Noisy()\n"
        "\n"
        "@tf.function\n"
        "def train_step(x):\n"
        "    print('tracing')\n"
        "    return layer(x)\n"
        "\n"
        "train_step(tf.ones((2, 4)))\n"
    )
    assert _side_effects(src) == [
        (
            8,
            "print(...) prints once, while TensorFlow traces it, not every step (Noisy.call "
            "is traced: it runs inside the tf.function train_step).",
        ),
        (
            15,
            "print(...) prints once, while TensorFlow traces it, not every step (train_step "
            "is traced: it is a tf.function).",
        ),
    ]
