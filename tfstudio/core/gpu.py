"""NVIDIA GPUs through NVML (nvidia-ml-py, ``import pynvml``), read from outside the run.

The reader never raises: on a machine without NVIDIA GPUs (no library, no
driver) it quietly reports nothing; when the library is missing on a machine
that has a driver, when NVML fails to start, or when it fails mid-run, it stops
and leaves one short :attr:`GpuReader.note` for the UI to show once. A figure a
GPU does not give (utilisation of a MIG slice or of some virtual GPUs,
temperature of some boards) is None, and the rest are still read. The NVML
module is injectable so tests can put a fake at this hardware boundary.

A GPU in MIG mode is read as its MIG devices (the slices a job is given on a
shared A100 or H100): each with its own memory and the run's memory on it;
utilisation NVML does not give for MIG, so it is None; temperature and power
are the physical GPU's.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

# NVML error codes (nvml.h); used when the module does not name them.
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4  # e.g. the processes of a whole MIG-mode GPU, from inside a container
_UNANSWERED = {_NOT_SUPPORTED, _NO_PERMISSION}
_MIG_ENABLE = 1  # NVML_DEVICE_MIG_ENABLE
_DRIVER_NOT_LOADED = 9
_LIBRARY_NOT_FOUND = 12
_NO_GPU_CODES = {_DRIVER_NOT_LOADED, _LIBRARY_NOT_FOUND}

INSTALL_HINT = "pip install 'tfstudio[gpu]'"
FOREIGN_PIDS_NOTE = (
    "Run's GPU memory unknown: the driver gives the host's process ids, which this "
    "container cannot see (docker run --pid=host)."
)


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One look at one GPU.

    Args:
        index: NVML's index of the device (for a MIG device: of its physical GPU).
        name: e.g. ``"NVIDIA H100 80GB HBM3"`` (``"... MIG 1g.10gb"`` for a MIG device).
        utilization: % of the last sample period a kernel ran (NVML's "gpu" rate);
            None where NVML does not give it (MIG devices, some virtual GPUs).
        memory_used: bytes in use on the device (all processes).
        memory_total: the device's memory in bytes.
        process_memory: bytes held by the watched processes; None when NVML cannot tell.
        temperature: degrees Celsius, None when not supported.
        power: watts drawn, None when not supported.
        power_limit: enforced power limit in watts, None when not supported.
        mig: the MIG device's index on GPU ``index``; None for a whole GPU.
    """

    index: int
    name: str
    utilization: float | None
    memory_used: int
    memory_total: int
    process_memory: int | None = None
    temperature: float | None = None
    power: float | None = None
    power_limit: float | None = None
    mig: int | None = None

    @property
    def key(self) -> tuple[int, int]:
        """Tells devices apart (a GPU's MIG devices share its index)."""
        return (self.index, -1 if self.mig is None else self.mig)

    @property
    def label(self) -> str:
        """``GPU 0``, or ``GPU 0 MIG 1`` for a MIG device (as ``nvidia-smi -L`` numbers them)."""
        return f"GPU {self.index}" + self._mig_suffix()

    @property
    def device(self) -> str:
        """TensorFlow's name for it, ``GPU:0`` (``GPU:0 MIG 1`` for a MIG device): peaks
        from NVML and from TensorFlow are put side by side by it."""
        return f"GPU:{self.index}" + self._mig_suffix()

    def _mig_suffix(self) -> str:
        return "" if self.mig is None else f" MIG {self.mig}"


@dataclass(frozen=True, slots=True)
class _Device:
    """What the reader found at start: a whole GPU, or one MIG device of a GPU."""

    handle: Any
    name: str
    index: int
    mig: int | None
    parent: Any  # the physical GPU's handle (temperature and power are its)


def nvidia_driver_present() -> bool:
    """True when the machine shows signs of an NVIDIA driver (Linux's /proc, Windows' DLL)."""
    if os.path.exists("/proc/driver/nvidia/version"):
        return True
    system_root = os.environ.get("SystemRoot")
    return bool(system_root) and os.path.exists(os.path.join(system_root, "System32", "nvml.dll"))


def _load_pynvml() -> Any:
    import pynvml

    return pynvml


class GpuReader:
    """Reads every NVIDIA GPU's figures on demand; never raises.

    Args:
        nvml: the NVML module (``pynvml``'s interface); imported on first use when None.
    """

    def __init__(self, nvml: Any = None) -> None:
        self._nvml = nvml
        self._started = False
        self._failed = False
        self._devices: list[_Device] = []
        self.note: str | None = None  # one quiet note for the UI; None when all is well

    @property
    def available(self) -> bool:
        """True once NVML answered and there is at least one GPU."""
        return self._start() and bool(self._devices)

    def read(self, pids: Collection[int] = ()) -> tuple[GpuSample, ...]:
        """Every GPU's figures now; ``pids`` are the processes whose memory is summed.

        Returns an empty tuple when there is no GPU or NVML is unusable.
        """
        if not self._start():
            return ()
        nvml = self._nvml
        wanted = set(pids)
        out = []
        try:
            for dev in self._devices:
                handle, parent = dev.handle, dev.parent
                mem = nvml.nvmlDeviceGetMemoryInfo(handle)
                out.append(
                    GpuSample(
                        index=dev.index,
                        name=dev.name,
                        utilization=self._optional(_utilization, nvml, handle),
                        memory_used=int(mem.used),
                        memory_total=int(mem.total),
                        process_memory=self._process_memory(handle, wanted),
                        temperature=self._optional(
                            nvml.nvmlDeviceGetTemperature,
                            parent,
                            getattr(nvml, "NVML_TEMPERATURE_GPU", 0),
                        ),
                        power=_milli(self._optional(nvml.nvmlDeviceGetPowerUsage, parent)),
                        power_limit=_milli(
                            self._optional(nvml.nvmlDeviceGetEnforcedPowerLimit, parent)
                        ),
                        mig=dev.mig,
                    )
                )
        except Exception as exc:  # noqa: BLE001 - NVML failing mid-run must not end anything
            self._give_up(f"GPU figures stopped: NVML failed ({_describe(exc)})")
            return ()
        return tuple(out)

    def close(self) -> None:
        """Shut NVML down if this reader started it."""
        if self._started and not self._failed:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001, S110 - shutting down is best effort
                pass
        self._started = False
        self._devices = []

    # -- inside ------------------------------------------------------------
    def _start(self) -> bool:
        if self._failed:
            return False
        if self._started:
            return True
        if self._nvml is None:
            try:
                self._nvml = _load_pynvml()
            except ImportError:
                self._failed = True
                if nvidia_driver_present():
                    self.note = (
                        "An NVIDIA driver is present but nvidia-ml-py is not installed: "
                        f"GPU figures are not shown ({INSTALL_HINT})."
                    )
                return False
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001
            self._failed = True
            if _error_code(exc) not in _NO_GPU_CODES:  # no driver: a CPU-only machine, quietly
                self.note = f"GPU figures are not shown: NVML did not start ({_describe(exc)})."
            return False
        self._started = True
        try:
            for i in range(int(nvml.nvmlDeviceGetCount())):
                handle = nvml.nvmlDeviceGetHandleByIndex(i)
                migs = self._mig_devices(handle, i)
                if migs:
                    self._devices.extend(migs)
                else:  # a whole GPU (or one in MIG mode whose slices are not ours to see)
                    self._devices.append(_Device(handle, _name(nvml, handle), i, None, handle))
        except Exception as exc:  # noqa: BLE001
            self._give_up(f"GPU figures are not shown: NVML could not list GPUs ({_describe(exc)})")
            return False
        return True

    def _mig_devices(self, handle: Any, index: int) -> list[_Device]:
        """The MIG devices of GPU ``index`` when it is in MIG mode; [] otherwise.

        A GPU without MIG (or a driver or nvidia-ml-py too old to say) is read whole.
        Slots with no MIG device, or one this process may not see, are skipped.
        """
        nvml = self._nvml
        get_mode = getattr(nvml, "nvmlDeviceGetMigMode", None)
        if get_mode is None:
            return []
        try:
            current = get_mode(handle)[0]
        except Exception:  # noqa: BLE001 - NOT_SUPPORTED on GPUs without MIG
            return []
        if current != getattr(nvml, "NVML_DEVICE_MIG_ENABLE", _MIG_ENABLE):
            return []
        try:
            slots = int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))
        except Exception:  # noqa: BLE001
            return []
        found = []
        for j in range(slots):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, j)
            except Exception:  # noqa: BLE001, S112 - NOT_FOUND: no MIG device in this slot
                continue
            found.append(_Device(mig, _name(nvml, mig), index, j, handle))
        return found

    def _give_up(self, note: str) -> None:
        self.close()
        self._failed = True
        self._devices = []
        if self.note is None:
            self.note = note

    def _optional(self, fn: Any, *args: Any) -> float | None:
        """A figure some GPUs do not report (NOT_SUPPORTED, NO_PERMISSION): None, not an error."""
        try:
            return float(fn(*args))
        except Exception as exc:
            if _error_code(exc) in _UNANSWERED:
                return None
            raise

    def _process_memory(self, handle: Any, pids: set[int]) -> int | None:
        if not pids:
            return None
        try:
            procs = self._nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception as exc:
            if _error_code(exc) in _UNANSWERED:
                return None
            raise
        total, known, ours = 0, True, False
        for proc in procs:
            if proc.pid in pids:
                ours = True
                if proc.usedGpuMemory is None:  # WDDM on Windows: not reported
                    known = False
                else:
                    total += int(proc.usedGpuMemory)
        if not ours and procs and not _any_visible(proc.pid for proc in procs):
            # Older drivers know no pid namespaces: inside a container (without
            # --pid=host) they list the host's pids, none of which exist here. The run
            # may hold gigabytes; 0 would be a wrong figure. (Driver 580 gave the
            # namespace's own pids.)
            if self.note is None:
                self.note = FOREIGN_PIDS_NOTE
            return None
        return total if known else None


def _any_visible(pids: Iterable[int]) -> bool:
    """Whether any of these process ids exists in this process's pid namespace (Linux's
    /proc; True where there is no /proc to look in)."""
    if not os.path.isdir("/proc/self"):
        return True
    return any(os.path.exists(f"/proc/{pid}") for pid in pids)


def _utilization(nvml: Any, handle: Any) -> float:
    return float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)


def _name(nvml: Any, handle: Any) -> str:
    name = nvml.nvmlDeviceGetName(handle)
    if isinstance(name, bytes):  # older pynvml
        name = name.decode("utf-8", "replace")
    return str(name)


def _milli(value: float | None) -> float | None:
    return None if value is None else value / 1000.0


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


def run_utilization(gpus: Collection[GpuSample]) -> float | None:
    """How busy the run keeps its GPUs: the highest utilisation among those it holds memory on.

    When NVML cannot tell which GPUs the run holds (no per-process figures), every
    GPU counts. None when there are no figures at all (no GPU, or only MIG devices,
    whose utilisation NVML does not give).
    """
    own = [g for g in gpus if g.process_memory]
    figures = [g.utilization for g in (own or gpus) if g.utilization is not None]
    return max(figures) if figures else None


class IdleGpuWatch:
    """Spots a GPU left mostly idle while training runs: the input pipeline is then suspect.

    Feed it one utilisation figure a second; :meth:`feed` returns True once, the
    first time the GPU stayed under ``threshold`` % for ``sustain_s`` seconds of
    training (pauses, validation and compilation, when no steps come, do not count).

    Args:
        threshold: utilisation % under which the GPU counts as idle.
        sustain_s: how long it must stay idle, in seconds.
    """

    def __init__(self, threshold: float = 30.0, sustain_s: float = 20.0) -> None:
        self.threshold = threshold
        self.sustain_s = sustain_s
        self.fired = False
        self._since: float | None = None

    def reset(self) -> None:
        """Forget everything (a new run)."""
        self.fired = False
        self._since = None

    def feed(self, t: float, utilization: float | None, training: bool) -> bool:
        """Take the figure at time ``t`` (seconds); True exactly once, when the notice is due."""
        if self.fired:
            return False
        if not training or utilization is None or utilization >= self.threshold:
            self._since = None
            return False
        if self._since is None:
            self._since = t
        if t - self._since >= self.sustain_s:
            self.fired = True
            return True
        return False
