"""What the window's NVML reader shows from inside a pid namespace, as in a container.

Older NVIDIA drivers know no pid namespaces: from a container started without
``--pid=host``, NVML lists the GPU's processes by the host's process ids (NVIDIA's
container toolkit issues #179, #1460, 2016-2021); newer ones give the namespace's own.
This runs the check on a real GPU without Docker: it re-runs itself in a new pid namespace
(``unshare --pid --fork --mount-proc``, so it needs root), starts there the stand-in
GPU load of ``bench/gpu_check.py`` (PyTorch or CuPy) and reads it with
:class:`tfstudio.core.gpu.GpuReader` by its pid as seen in the namespace, as the
window reads a worker. It prints what NVML listed, whether those pids exist in the
namespace, and what the reader made of it; it ends with one line, for a driver that
gives the namespace's pids:

    container pids: the driver gives this namespace's pids; run's memory shown (held)

and for one that gives the host's: ``... the host's pids; run's memory unknown, note
given (held)``. ``(FAILED)`` when the reader's figure does not follow what NVML listed
(a wrong 0 for host pids, or nothing for pids that are this namespace's).
Without an NVIDIA GPU, ``unshare`` or root it says so and exits 0.

    python bench/gpu_container_pids.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

LOAD_S = 8.0  # the stand-in's busy time: long enough for a few reads


def inside(folder: Path) -> int:
    """In the namespace: start the load, read it, print one JSON line of what was seen."""
    from gpu_check import MARK, script_stand_in

    from tfstudio.core.gpu import GpuReader

    script = folder / "stand_in_load.py"
    script.write_text(script_stand_in())
    load = subprocess.Popen(
        [sys.executable, str(script), "busy", str(LOAD_S)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert load.stdout is not None
    for line in load.stdout:  # until its first kernel ran
        if line.startswith(MARK):
            break
    time.sleep(1.0)
    reader = GpuReader()
    samples = [reader.read([load.pid]) for _ in range(3)]
    import pynvml  # what NVML itself lists, to print beside the reader's figures

    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    listed = [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)]
    seen = {
        "pid_here": load.pid,
        "nvml_pids": listed,
        "exist_here": [os.path.exists(f"/proc/{pid}") for pid in listed],
        "process_memory": [s[0].process_memory for s in samples if s],
        "memory_used": [s[0].memory_used for s in samples if s],
        "note": reader.note,
    }
    reader.close()
    load.kill()
    load.wait()
    print("SEEN " + json.dumps(seen), flush=True)
    return 0


def main() -> int:
    """Outside: run this script again in a new pid namespace and judge what it saw."""
    from tfstudio.core.gpu import GpuReader

    reader = GpuReader()
    has_gpu = reader.available
    reader.close()
    if not has_gpu:
        print("container pids: no NVIDIA GPU: skipped")
        return 0
    if shutil.which("unshare") is None or os.geteuid() != 0:
        print("container pids: needs root and unshare(1): skipped")
        return 0
    with tempfile.TemporaryDirectory(prefix="gpu-pids-") as tmp:
        namespace = ["unshare", "--pid", "--fork", "--mount-proc"]
        proc = subprocess.run(
            [*namespace, sys.executable, __file__, "--inside", tmp],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SEEN ")]
    if not lines:
        print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
        print(f"container pids: the namespace's run failed (exit {proc.returncode}) (FAILED)")
        return 1
    seen = json.loads(lines[-1][5:])
    for key, value in seen.items():
        print(f"{key}: {value}")
    ours = seen["pid_here"] in seen["nvml_pids"]
    memory = seen["process_memory"]
    if ours:
        held = all(m for m in memory) and not seen["note"]
        verdict = "the driver gives this namespace's pids; run's memory " + (
            "shown" if held else "NOT shown"
        )
    else:
        held = all(m is None for m in memory) and bool(seen["note"])
        verdict = "the driver gives the host's pids; run's memory " + (
            "unknown, note given" if held else f"shown as {memory}"
        )
    print(f"container pids: {verdict} ({'held' if held else 'FAILED'})")
    return 0 if held else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--inside":
        sys.exit(inside(Path(sys.argv[2])))
    sys.exit(main())
