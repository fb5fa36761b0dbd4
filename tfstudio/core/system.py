"""CPU and memory of a run's process and of the machine, sampled with psutil.

The window (and the headless runner) sample the worker process from outside:
nothing here runs in the worker and nothing touches TensorFlow or Qt. psutil is
imported lazily; without it :class:`ProcessSampler` is simply unavailable.

In the worker, :class:`SystemSampling` samples the run's own processes, the machine
and its GPUs once a second on a thread of its own and emits them as
:class:`~tfstudio.core.events.SystemSampled` events (recorded as ``system/...``
scalars, shown live).

For the headless runner, :class:`ResourceWatch` follows a run's events (the
worker's ``SystemSampled`` among them: it samples nothing itself unless the worker
sends none) and words the device line printed at the start and the peak-memory line
of the run summary.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfstudio.core.events import DeviceMemory, RunDevices, RunEnded, RunStarted, SystemSampled
from tfstudio.core.gpu import GpuReader, GpuSample

SAMPLE_INTERVAL_S = 1.0


def format_bytes(n: float | None) -> str:
    """``1.23 GiB`` / ``512 MiB`` / ``12.1 KiB``: memory in binary units.

    As nvidia-smi (MiB), ``free -h`` and TensorFlow's own logs count it, and as the GPU's
    name does: an "H100 80GB" reports 85,520,809,984 bytes, 79.6 GiB (85.5 decimal GB
    beside "80GB" in its name read as a mistake).
    """
    if n is None:
        return "--"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            value = n / size
            digits = 2 if value < 10 else 1 if value < 100 else 0
            return f"{value:.{digits}f} {unit}"
    return f"{int(n)} B"


@dataclass(frozen=True, slots=True)
class SystemSample:
    """One look at a run's process and at the machine.

    Args:
        wall_time: ``time.time()`` when taken.
        pid: the process sampled (its children are included in its figures).
        alive: False once the process is gone (its figures are then ``None``).
        process_cpu: CPU % of the process and its children (100 = one core busy).
        process_rss: resident memory in bytes of the process and its children.
        machine_cpu: CPU % of the whole machine (100 = every core busy).
        machine_memory_used: bytes in use on the machine (total - available).
        machine_memory_total: the machine's memory in bytes.
        cpu_count: logical CPUs of the machine.
        children: how many child processes were included.
    """

    wall_time: float
    pid: int
    alive: bool
    process_cpu: float | None
    process_rss: int | None
    machine_cpu: float
    machine_memory_used: int
    machine_memory_total: int
    cpu_count: int
    children: int = 0


def _psutil() -> Any:
    try:
        import psutil
    except ImportError:
        return None
    return psutil


def peak_rss_of(pid: int) -> int | None:
    """The process's own high-water resident memory (Linux ``VmHWM``), or None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _descendants(pid: int) -> list[int] | None:
    """Descendants of ``pid`` from Linux's /proc/PID/task/TID/children; None where unsupported.

    psutil's ``children(recursive=True)`` reads every process on the machine
    (~13 ms on a busy one); these files name just the children.
    """
    out: list[int] = []
    todo = [pid]
    try:
        while todo:
            parent = todo.pop()
            for tid in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{tid}/children", encoding="ascii") as f:
                    kids = [int(k) for k in f.read().split()]
                out.extend(kids)
                todo.extend(kids)
    except FileNotFoundError:
        if parent == pid:
            return None  # no such file (not Linux, or the kernel lacks it), or pid gone
    except (OSError, ValueError):
        return None
    return out


class ProcessSampler:
    """Samples one process (with its children) and the machine; cheap enough for 1 Hz.

    CPU % is measured between two calls of :meth:`sample` (psutil's way), so
    the first sample reports 0 %.

    Args:
        pid: the process to watch; 0 means this process.
        include_children: add the figures of the process's descendants.
    """

    def __init__(self, pid: int = 0, include_children: bool = True) -> None:
        self.pid = pid if pid > 0 else os.getpid()
        self.include_children = include_children and pid > 0
        self._psutil = _psutil()
        self._proc: Any = None
        self._children: dict[int, Any] = {}
        self.alive = self._psutil is not None
        if self._psutil is not None:
            try:
                self._proc = self._psutil.Process(self.pid)
                self._proc.cpu_percent(None)
            except self._psutil.Error:
                self.alive = False
            self._psutil.cpu_percent(None)

    @property
    def available(self) -> bool:
        """True when psutil is installed (without it nothing can be sampled)."""
        return self._psutil is not None

    def pids(self) -> tuple[int, ...]:
        """The process and the children seen at the last sample."""
        return (self.pid, *self._children)

    def sample(self) -> SystemSample | None:
        """Take one sample; None when psutil is not installed."""
        ps = self._psutil
        if ps is None:
            return None
        cpu_total, rss_total, n_children = None, None, 0
        if self.alive:
            try:
                with self._proc.oneshot():
                    cpu_total = self._proc.cpu_percent(None)
                    rss_total = self._proc.memory_info().rss
            except ps.Error:
                self.alive = False
                cpu_total, rss_total = None, None
                self._children.clear()
        if self.alive and self.include_children:
            cpu_c, rss_c, n_children = self._sample_children(ps)
            cpu_total = (cpu_total or 0.0) + cpu_c
            rss_total = (rss_total or 0) + rss_c
        mem = ps.virtual_memory()
        return SystemSample(
            wall_time=time.time(),
            pid=self.pid,
            alive=self.alive,
            process_cpu=cpu_total,
            process_rss=rss_total,
            machine_cpu=ps.cpu_percent(None),
            machine_memory_used=int(mem.total - mem.available),
            machine_memory_total=int(mem.total),
            cpu_count=ps.cpu_count() or 1,
            children=n_children,
        )

    def _sample_children(self, ps: Any) -> tuple[float, int, int]:
        pids = _descendants(self.pid)
        if pids is None:
            try:
                pids = [c.pid for c in self._proc.children(recursive=True)]
            except ps.Error:
                return 0.0, 0, 0
        seen: dict[int, Any] = {}
        cpu, rss = 0.0, 0
        for pid in pids:
            try:
                # Keep the Process objects: cpu_percent measures since the previous call
                # on the same object, so a fresh object would always say 0 %.
                proc = self._children.get(pid) or ps.Process(pid)
                with proc.oneshot():
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
            except ps.Error:
                continue
            seen[pid] = proc
        self._children = seen
        return cpu, rss, len(seen)


class PeakTracker:
    """Peak memory of one run: host (the worker and its children) and per GPU.

    Feed it :class:`SystemSample`, GPU samples and :class:`DeviceMemory` events;
    it keeps the highest figures seen.
    """

    def __init__(self) -> None:
        self.host_rss = 0
        # NVML: bytes the run's processes held, per GPU ("GPU:0", "GPU:0 MIG 1")
        self.gpu_process: dict[str, int] = {}
        self.gpu_tf: dict[str, int] = {}  # TensorFlow's peak per device ("GPU:0")

    def add_sample(self, sample: SystemSample | None) -> None:
        """Take a host sample (and the process's own high-water mark, where the OS keeps one)."""
        if sample is None:
            return
        if sample.process_rss is not None:
            self.host_rss = max(self.host_rss, sample.process_rss)
        hwm = peak_rss_of(sample.pid) if sample.alive else None
        if hwm is not None:
            self.host_rss = max(self.host_rss, hwm)

    def add_gpus(self, gpus: Iterable[GpuSample]) -> None:
        """Take NVML figures (only the run's own memory on each GPU counts)."""
        for gpu in gpus:
            if gpu.process_memory is not None:
                name = gpu.device
                self.gpu_process[name] = max(self.gpu_process.get(name, 0), gpu.process_memory)

    def add_values(self, values: Mapping[str, float], pid: int = 0) -> None:
        """Take a worker's sample as ``SystemSampled`` carries it (``process/rss_bytes``,
        ``gpu0/process_memory_bytes``, ...), and the high-water mark of ``pid`` (the
        worker) where the OS keeps one: the peak between two samples."""
        rss = values.get("process/rss_bytes")
        if rss is not None:
            self.host_rss = max(self.host_rss, int(rss))
        hwm = peak_rss_of(pid) if pid > 0 else None
        if hwm is not None:
            self.host_rss = max(self.host_rss, hwm)
        for name, value in values.items():
            key, _, figure = name.partition("/")
            if figure != "process_memory_bytes" or not key.startswith("gpu"):
                continue
            index, _, mig = key[len("gpu") :].partition("_mig")
            device = f"GPU:{index}" + (f" MIG {mig}" if mig else "")
            self.gpu_process[device] = max(self.gpu_process.get(device, 0), int(value))

    def add_device_memory(self, event: DeviceMemory) -> None:
        """Take TensorFlow's own current/peak figures from the worker."""
        for name, current, peak in zip(event.devices, event.current, event.peak, strict=False):
            self.gpu_tf[name] = max(self.gpu_tf.get(name, 0), current, peak)

    def summary(self) -> str:
        """``peak memory: host 1.23 GB, GPU:0 3.40 GB (TensorFlow peak 2.90 GB)``; host only on CPU.

        Per GPU: what the run's processes held (NVML: TensorFlow's pool plus the CUDA
        context) and TensorFlow's own allocator peak, whichever are known. GPUs the
        run never held memory on are left out.
        """
        parts = [f"host {format_bytes(self.host_rss)}" if self.host_rss else "host --"]
        held = {name: peak for name, peak in self.gpu_process.items() if peak > 0}
        for name in sorted(set(held) | set(self.gpu_tf)):
            tf_peak = self.gpu_tf.get(name)
            if name in held and tf_peak is not None:
                parts.append(
                    f"{name} {format_bytes(held[name])} (TensorFlow peak {format_bytes(tf_peak)})"
                )
            elif name in held:
                parts.append(f"{name} {format_bytes(held[name])}")
            else:
                parts.append(f"{name} {format_bytes(tf_peak)} (TensorFlow peak)")
        return "peak memory: " + ", ".join(parts)


def device_line(event: RunDevices) -> str:
    """The run's device for a terminal: ``device: GPU 0: NVIDIA H100`` or ``device: CPU``."""
    return f"device: {event.describe()}"


class ResourceWatch:
    """Follows a run's events for the headless runner: its device line and peak memory.

    Feed every event to :meth:`ingest`. The worker samples its own processes, the
    machine and its GPUs once a second (:class:`SystemSampling`): its ``SystemSampled``
    events are the peaks' samples, and nothing is sampled twice. Only a run whose
    worker sends none within ``fallback_s`` of ``RunStarted`` is sampled from outside,
    in a thread (``pid`` 0 samples this process), until ``RunEnded``. It returns the
    line to print for ``RunDevices``. :meth:`summary` words the run's peak memory.
    Call :meth:`close` when done (also a context manager).

    Args:
        interval: seconds between samples (taken from outside).
        gpu_reader: NVML access for samples from outside; a default :class:`GpuReader`
            when None (NVML is only opened if it samples).
        fallback_s: how long to wait for the worker's first sample before sampling from
            outside (default: three intervals).
    """

    def __init__(
        self,
        interval: float = SAMPLE_INTERVAL_S,
        gpu_reader: GpuReader | None = None,
        fallback_s: float | None = None,
    ) -> None:
        self.interval = interval
        self.fallback_s = 3 * interval if fallback_s is None else fallback_s
        self._gpu_reader = gpu_reader
        self.peaks = PeakTracker()
        self.worker_samples = 0  # SystemSampled events taken (this run)
        self.outside_samples = 0  # samples taken from outside (this run)
        self._pid = 0
        self._sampler: ProcessSampler | None = None
        self._failed = False  # sampling from outside failed (said once)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def gpu_reader(self) -> GpuReader:
        """NVML access for samples from outside (opened on first use)."""
        if self._gpu_reader is None:
            self._gpu_reader = GpuReader()
        return self._gpu_reader

    def __enter__(self) -> ResourceWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ingest(self, event: object) -> str | None:
        """Follow one event; returns a line to print (for ``RunDevices``), else None."""
        if isinstance(event, SystemSampled):
            with self._lock:
                self.worker_samples += 1
                self.peaks.add_values(event.values, self._pid)
            self._stop.set()  # the worker samples: none from outside (or no more)
        elif isinstance(event, RunStarted):
            self.start(event.pid)
        elif isinstance(event, RunDevices):
            return device_line(event)
        elif isinstance(event, DeviceMemory):
            with self._lock:
                self.peaks.add_device_memory(event)
        elif isinstance(event, RunEnded):
            self.stop()
        return None

    def start(self, pid: int) -> None:
        """A run of ``pid`` (0: this process) started: forgets an earlier run; samples it
        from outside once a second only if its worker sends no sample (``fallback_s``)."""
        self.stop()
        with self._lock:
            self.peaks = PeakTracker()
            self.worker_samples = self.outside_samples = 0
        self._pid = pid
        self._sampler = None
        self._failed = False
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="tfstudio-resources", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following the run (sampled from outside: one last sample first); the peaks
        are kept."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout=5)
        if not self.worker_samples and not self._failed:
            self._sample_once()

    def close(self) -> None:
        """Stop sampling and let NVML go."""
        self.stop()
        if self._gpu_reader is not None:
            self._gpu_reader.close()

    def summary(self) -> str:
        """The run's peak memory, one line (see :meth:`PeakTracker.summary`)."""
        with self._lock:
            return self.peaks.summary()

    def _loop(self) -> None:
        if self._stop.wait(self.fallback_s) or self.worker_samples:
            return  # the worker samples its run (or the run ended first)
        self._sample_once()
        while not self._stop.wait(self.interval):
            self._sample_once()

    def _sample_once(self) -> None:
        try:
            if self._sampler is None:
                self._sampler = ProcessSampler(self._pid)
            sampler = self._sampler
            sample = sampler.sample()
            gpus = self.gpu_reader.read(sampler.pids())
        except Exception as exc:  # noqa: BLE001 - a monitor never ends a run
            print(f"tfstudio: resource sampling failed: {exc!r}", file=sys.stderr)
            self._failed = True
            self._stop.set()
            return
        with self._lock:
            self.outside_samples += 1
            self.peaks.add_sample(sample)
            self.peaks.add_gpus(gpus)


def _f32(value: float) -> float:
    """``value`` as float32 holds it: the event file's scalars are float32, so a live
    sample and the same sample read back from the run folder are equal."""
    return float(np.float32(value))


def system_values(sample: SystemSample | None, gpus: Iterable[GpuSample] = ()) -> dict[str, float]:
    """One look's figures by name, as :class:`~tfstudio.core.events.SystemSampled` carries
    them (recorded as ``system/<name>``); a figure not known is left out."""
    out: dict[str, float] = {}
    if sample is not None:
        if sample.process_cpu is not None:
            out["process/cpu_percent"] = sample.process_cpu
        if sample.process_rss is not None:
            out["process/rss_bytes"] = sample.process_rss
        out["machine/cpu_percent"] = sample.machine_cpu
        out["machine/memory_used_bytes"] = sample.machine_memory_used
        out["machine/memory_total_bytes"] = sample.machine_memory_total
    for gpu in gpus:
        key = f"gpu{gpu.index}" + ("" if gpu.mig is None else f"_mig{gpu.mig}")
        if gpu.utilization is not None:
            out[f"{key}/utilization_percent"] = gpu.utilization
        out[f"{key}/memory_used_bytes"] = gpu.memory_used
        out[f"{key}/memory_total_bytes"] = gpu.memory_total
        if gpu.process_memory is not None:
            out[f"{key}/process_memory_bytes"] = gpu.process_memory
    return {name: _f32(value) for name, value in out.items()}


class SystemSampling:
    """Samples this process (with its children), the machine and its GPUs once a second
    on a thread of its own and emits :class:`~tfstudio.core.events.SystemSampled`.

    The worker runs one for its run (the training thread does nothing for it): the
    recorder writes the samples as ``system/...`` scalars and the viewer gets them as
    events, so a live run and its reopened folder show the same figures. A context
    manager: entering starts the thread, leaving stops it after one last sample.
    Sampling errors end the sampling, reported once through ``on_error``; never raised.

    Args:
        emit: takes each event (the run's channel's ``emit``).
        now: seconds since the run started.
        step: the run's global step now.
        interval: seconds between samples.
        gpu_reader: NVML access; a default :class:`GpuReader` when None.
        on_error: told of a failure (``where``, exception).
    """

    def __init__(
        self,
        emit: Callable[[SystemSampled], None],
        now: Callable[[], float],
        step: Callable[[], int],
        *,
        interval: float = SAMPLE_INTERVAL_S,
        gpu_reader: GpuReader | None = None,
        on_error: Callable[[str, BaseException], None] | None = None,
    ) -> None:
        self.emit = emit
        self.now = now
        self.step = step
        self.interval = interval
        self.on_error = on_error
        self.samples = 0
        self._gpu_reader = gpu_reader
        self._sampler: ProcessSampler | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failed = False

    def __enter__(self) -> SystemSampling:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="tfstudio-system", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=5)
        self.sample()  # the run's last figures (and a run shorter than one interval)
        if self._gpu_reader is not None:
            self._gpu_reader.close()

    def _loop(self) -> None:
        with self._lock:  # psutil's CPU % counts from here: the first sample an interval on
            if not self._start():
                return
        while not self._stop.wait(self.interval):
            self.sample()

    def _start(self) -> bool:
        try:
            self._sampler = ProcessSampler(os.getpid())  # with its children
            if self._gpu_reader is None:
                self._gpu_reader = GpuReader()
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
            return False
        return True

    def _fail(self, exc: BaseException) -> None:
        self._failed = True
        self._stop.set()
        if self.on_error is not None:
            self.on_error("system sampler", exc)

    def sample(self) -> SystemSampled | None:
        """Take and emit one sample now; None when nothing could be sampled."""
        with self._lock:
            if self._failed or (self._stop.is_set() and self._thread is not None):
                return None  # (the thread's last turn while __exit__ takes the final one)
            if self._sampler is None and not self._start():
                return None
            try:
                sample = self._sampler.sample()
                gpus = self._gpu_reader.read(self._sampler.pids())
                values = system_values(sample, gpus)
                if not values:
                    return None
                event = SystemSampled(self.now(), int(self.step()), values)
                self.samples += 1
                self.emit(event)
                return event
            except Exception as exc:  # noqa: BLE001 - monitoring never fails training
                self._fail(exc)
                return None
