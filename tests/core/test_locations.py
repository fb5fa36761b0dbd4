"""Run folders named by URLs: the scheme dispatch, and reading through TensorBoard's file layer.

No TensorFlow and no network here: ``file://`` URLs go through TensorBoard's gfile
(via fsspec, exactly the path ``gs://`` takes with gcsfs installed); local paths
keep going through ``os``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.core.tfevents import write_events
from tfstudio.core.locations import LOCAL, GFileFS, UrlPath, fs_for, location, scheme_of
from tfstudio.core.runs import (
    RunReader,
    UnsupportedLocation,
    export_scalars_csv,
    is_run_dir,
    list_runs,
    resolve_logdir,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_scheme_makes_a_url_everything_else_stays_a_local_path(tmp_path, monkeypatch):
    monkeypatch.delenv("TFSTUDIO_LOGDIR", raising=False)
    assert location("gs://bucket/runs/") == UrlPath("gs://bucket/runs")
    assert isinstance(location(str(tmp_path)), Path)
    assert isinstance(location("relative/dir"), Path)
    assert isinstance(location("C:\\runs"), Path)  # a drive letter is not a scheme
    url = UrlPath("gs://bucket/runs") / "mlp-20260101-000000"
    assert str(url) == "gs://bucket/runs/mlp-20260101-000000"
    assert url.name == "mlp-20260101-000000" and url.parent == UrlPath("gs://bucket/runs")
    assert url.with_name("renamed") == UrlPath("gs://bucket/runs/renamed")
    assert scheme_of("S3://b/k") == "s3" and scheme_of("/tmp/x") == ""
    with pytest.raises(ValueError, match="not a URL"):
        UrlPath("/tmp/x")
    # local paths go through os; URLs through a gfile
    assert fs_for(tmp_path) is LOCAL
    assert isinstance(fs_for(url), GFileFS)
    assert resolve_logdir("gs://bucket/runs", tmp_path) == UrlPath("gs://bucket/runs")
    assert resolve_logdir(None, tmp_path) == tmp_path.resolve() / "tfstudio-runs"


def _file_url(path: Path) -> str:
    return f"file://{path}"


def test_runs_read_and_followed_through_a_url(tmp_path):
    pytest.importorskip("fsspec", reason="TensorBoard reads other schemes through fsspec")
    run = tmp_path / "runs" / "mlp-20260101-000000"
    writer = write_events(run, {"step/loss": [(1, 0.5), (2, 0.25)]}, keep_open=True)
    url = _file_url(tmp_path / "runs")
    [info] = list_runs(url)
    assert info.path == UrlPath(f"{url}/mlp-20260101-000000") and info.steps == 2
    assert is_run_dir(info.path)
    reader = RunReader(info.path)
    assert reader.update() == 2
    assert reader.scalars["step/loss"].values == [0.5, 0.25]
    assert reader.update() == 0  # nothing appended
    writer.add("step/loss", 3, 0.125)  # the writer appends a step
    assert reader.update() == 1  # only what was appended
    writer.add_partial("step/loss", 4, 0.0625)  # caught mid-write: not read yet
    assert reader.update() == 0
    writer.finish_partial()
    writer.close()
    assert reader.update() == 1
    assert reader.scalars["step/loss"].steps == [1, 2, 3, 4]
    out = tmp_path / "loss.csv"
    assert export_scalars_csv(info.path, out) == 4


def test_an_unsupported_scheme_says_what_where_and_what_would_help(tmp_path):
    with pytest.raises(UnsupportedLocation) as err:
        list_runs("nosuchfs://bucket/runs")
    text = str(err.value)
    assert "nosuchfs://bucket/runs" in text and "'nosuchfs://'" in text
    assert "TensorBoard's file layer" in text
    with pytest.raises(UnsupportedLocation):
        RunReader("nosuchfs://bucket/runs/a").update()
    try:
        import gcsfs  # noqa: F401
    except ImportError:  # the usual case here: gs:// needs fsspec + gcsfs in the window
        with pytest.raises(UnsupportedLocation, match="gcsfs"):
            list_runs("gs://bucket/runs")


def test_reading_a_url_does_not_import_tensorflow(tmp_path):
    pytest.importorskip("fsspec")
    write_events(tmp_path / "runs" / "a-20260101-000000", {"step/loss": [(1, 0.5), (2, 0.25)]})
    code = textwrap.dedent(
        f"""
        import sys
        from tfstudio.core.runs import list_runs, read_scalars
        [run] = list_runs({_file_url(tmp_path / "runs")!r})
        assert read_scalars(run.path)["step/loss"].values == [0.5, 0.25]
        assert "tensorflow" not in sys.modules, "reading a URL imported TensorFlow"
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "tfstudio", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_cli_lists_and_exports_urls_and_refuses_unsupported_schemes_cleanly(tmp_path):
    pytest.importorskip("fsspec")
    write_events(tmp_path / "runs" / "a-20260101-000000", {"step/loss": [(1, 0.5), (2, 0.25)]})
    url = _file_url(tmp_path / "runs")
    listed = _cli("runs", url)
    assert listed.returncode == 0, listed.stderr
    cells = listed.stdout.splitlines()[1].split()  # under the table's header
    assert cells[0] == "a-20260101-000000" and cells[3:6] == ["tensorboard", "2", "0.25*"]
    out = tmp_path / "a.csv"
    exported = _cli("export", f"{url}/a-20260101-000000", "--csv", str(out))
    assert exported.returncode == 0, exported.stderr
    assert out.read_text().splitlines()[1].startswith("step/loss,1,0.5,")
    refused = _cli("runs", "nosuchfs://bucket/runs")
    assert refused.returncode == 2
    assert "nosuchfs://bucket/runs" in refused.stderr and "Traceback" not in refused.stderr
