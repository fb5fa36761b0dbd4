"""A run model's system samples, read by name: what the System view draws.

The samples are taken in the worker once a second (``core/system.py``'s
``SystemSampling``) and reach the run model as
:class:`~tfstudio.core.events.SystemSampled` events, or from a run folder's
``system/...`` scalars (``core/run_record.py``): the model keeps them under the
recorded tags either way, so the System view draws a live run and a reopened one
alike. These helpers name the tags and read them (no Qt).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from tfstudio.core.gpu import GpuSample
from tfstudio.core.run_model import SystemSamples
from tfstudio.core.system import SystemSample, system_values

PREFIX = "system/"
PROCESS_CPU = "system/process/cpu_percent"  # % of one core (100 = one core busy)
PROCESS_RSS = "system/process/rss_bytes"  # the worker and its children
MACHINE_CPU = "system/machine/cpu_percent"  # % of every core
MACHINE_MEMORY = "system/machine/memory_used_bytes"
MACHINE_MEMORY_TOTAL = "system/machine/memory_total_bytes"
GPU_UTILIZATION = "utilization_percent"  # after a GPU's prefix (gpus_in)
GPU_MEMORY_USED = "memory_used_bytes"
GPU_MEMORY_TOTAL = "memory_total_bytes"
GPU_PROCESS_MEMORY = "process_memory_bytes"


def tagged(values: Mapping[str, float]) -> dict[str, float]:
    """A ``SystemSampled`` event's figures under their recorded tags (``system/<name>``)."""
    return {PREFIX + name: value for name, value in values.items()}


def values_of(sample: SystemSample | None, gpus: Iterable[GpuSample] = ()) -> dict[str, float]:
    """One look at a process, the machine and the GPUs under the recorded tags."""
    return tagged(system_values(sample, gpus))


def gpus_in(samples: SystemSamples) -> list[str]:
    """The GPU tag prefixes sampled (``system/gpu0/``, ``system/gpu0_mig1/``), in order."""
    found: list[str] = []
    for tag in samples.tags():
        if tag.startswith(PREFIX + "gpu") and tag.count("/") == 2:
            prefix = tag.rsplit("/", 1)[0] + "/"
            if prefix not in found:
                found.append(prefix)
    return found


def gpu_key(prefix: str) -> tuple[tuple[int, int], str]:
    """A GPU's key (NVML index, MIG index or -1) and label (``GPU 0 MIG 1``) from its prefix."""
    name = prefix[len(PREFIX + "gpu") :].rstrip("/")
    index, _, mig = name.partition("_mig")
    key = (int(index), int(mig) if mig else -1)
    return key, f"GPU {key[0]}" + (f" MIG {key[1]}" if mig else "")


def last_values(samples: SystemSamples) -> dict[str, float]:
    """Each tag's newest value."""
    return {tag: vs[-1] for tag, (_, vs) in samples.series.items() if vs}


def peak(samples: SystemSamples, tag: str) -> float | None:
    """A tag's largest value (None when never sampled)."""
    _, values = samples.arrays(tag)
    finite = values[np.isfinite(values)]
    return float(finite.max()) if len(finite) else None
