"""bench/gpu_check.py on a machine without an NVIDIA GPU: one skip line, exit 0, no TensorFlow.

The GPU path itself needs a GPU (docs/benchmarks.md, "GPU check"); here the
checks' scripts are at least generated and compiled, and the way a check reads
what its script printed about itself is exercised.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tfstudio.core.gpu import nvidia_driver_present

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "gpu_check.py"

no_gpu_here = pytest.mark.skipif(
    nvidia_driver_present() or shutil.which("nvidia-smi") is not None,
    reason="this machine has an NVIDIA driver: the bench would run its checks",
)


def _load_bench():
    spec = importlib.util.spec_from_file_location("gpu_check_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@no_gpu_here
def test_without_a_gpu_it_prints_the_skip_line_and_exits_0():
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, str(BENCH)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["gpu: no NVIDIA GPU: skipped"], proc.stdout


@no_gpu_here
def test_deciding_there_is_no_gpu_does_not_import_tensorflow(capsys):
    had_tf = "tensorflow" in sys.modules  # another test of this process may have imported it
    bench = _load_bench()
    assert bench.why_no_gpu() == ""
    assert bench.main(["--only", "nvml"]) == 0
    assert capsys.readouterr().out == "gpu: no NVIDIA GPU: skipped\n"
    if not had_tf:
        assert "tensorflow" not in sys.modules


def test_every_check_has_a_script_that_compiles():
    bench = _load_bench()
    assert set(bench.SCRIPTS) == set(bench.CHECKS)
    assert len(bench.CHECKS) == 8
    for name, generate in bench.SCRIPTS.items():
        source = generate()
        compile(source, f"{name}.py", "exec")
        assert bench.MARK.strip() in source or name == "idle-notice", name
    compile(bench.script_stand_in(), "stand_in_load.py", "exec")


def test_mirrored_script_records_into_the_folder_it_is_given(tmp_path):
    bench = _load_bench()
    source = bench.script_mirrored(str(tmp_path / "runs"))
    compile(source, "mirrored.py", "exec")
    assert f"StudioCallback({str(tmp_path / 'runs')!r})" in source


def test_a_check_reads_what_its_script_printed_about_itself():
    bench = _load_bench()
    printed = 'epoch 1\nGPUCHECK {"step": 1, "loss": 0.5}\nGPUCHECK {"step": 2, "loss": 0.25}\n'
    outcome = bench.Outcome(console=printed)
    assert outcome.reports() == [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25}]
    assert outcome.report("loss") == 0.25
    assert outcome.report("missing") is None
    assert outcome.failure() == "the run never ended"


def test_only_takes_a_known_check_name():
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--only", "no-such-check"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "mixed-precision" in proc.stderr


def test_without_tensorflow_on_the_gpu_the_other_checks_say_they_did_not_run(capsys):
    bench = _load_bench()
    assert set(bench.STAND_INS) <= set(bench.CHECKS)
    assert bench.run_checks(["tf-memory", "mirrored"], without_tensorflow="no TensorFlow") == 0
    assert capsys.readouterr().out.splitlines() == [
        "gpu: tf-memory not run (TensorFlow cannot use the GPU here)",
        "gpu: mirrored not run (TensorFlow cannot use the GPU here)",
        "gpu: 0/2 checks hold",
    ]


# A GPU library the stand-in load can import: numpy on the CPU, sizes ignored.
FAKE_TORCH = """\
import numpy as np
__version__ = "0.0-fake"


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def synchronize():
        pass


float32 = np.float32


def device(name):
    return name


def randn(n, m, device=None):
    return np.eye(8, dtype=np.float32)


def ones(count, dtype=None, device=None):
    return np.ones(8, dtype=np.float32)
"""


def test_the_stand_in_load_is_found_by_its_pid_and_judged_busy(tmp_path, monkeypatch):
    import psutil

    from tests.fake_nvml import GB, H100, FakeNvml
    from tfstudio.core.gpu import GpuReader

    class SeesTheLoad(FakeNvml):
        """NVML as a driver would answer: the stand-in holds 1 GB, another process 8 GB."""

        def nvmlDeviceGetComputeRunningProcesses(self, h):
            loads = [
                p.pid
                for p in psutil.process_iter(["cmdline"])
                if any("stand_in_load.py" in part for part in (p.info["cmdline"] or ()))
            ]
            return [SimpleNamespace(pid=pid, usedGpuMemory=GB) for pid in loads] + [
                SimpleNamespace(pid=1, usedGpuMemory=8 * GB)
            ]

    (tmp_path / "lib" / "torch").mkdir(parents=True)
    (tmp_path / "lib" / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    bench = _load_bench()
    monkeypatch.setattr(bench, "STAND_IN_BUSY_S", 1.5)  # the fake's figures do not change
    work = tmp_path / "work"
    work.mkdir()
    detail = bench.check_nvml_stand_in(work, gpu_reader=GpuReader(SeesTheLoad([H100])))
    assert detail.startswith("NVIDIA H100 80GB HBM3: busiest 87% (median 87%)"), detail
    assert "run's process 1.00 GiB" in detail  # its own memory, not the other process's
    assert "headless 'peak memory: GPU:0 1.00 GiB'" in detail
    assert "61 C, 310 of 700 W" in detail
    assert detail.endswith("load: torch 0.0-fake")


def test_a_mig_device_is_judged_on_its_memory_alone():
    from tests.fake_nvml import H100_MIG, FakeNvml
    from tfstudio.core.gpu import GpuReader

    bench = _load_bench()
    reader = GpuReader(FakeNvml([H100_MIG]))
    samples = [(0.25 * i, reader.read(pids=(100,))) for i in range(4)]
    detail = bench.judge_busy_samples(samples)
    assert detail.startswith(
        "NVIDIA H100 80GB HBM3 MIG 3g.40gb: utilisation not given (MIG), MIG: 2 device(s), "
        "used 12.0 GiB of 40.0 GiB, run's process 11.0 GiB"
    ), detail
    assert "headless 'peak memory: GPU:0 MIG 0 11.0 GiB'" in detail
