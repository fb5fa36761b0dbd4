"""A fake NVML module (pynvml's interface) for tests: the hardware boundary."""

from __future__ import annotations

from types import SimpleNamespace

GB = 1 << 30  # a GiB: memory figures are shown in binary units
H100_TOTAL = 85_520_809_984  # what NVML reported for a real H100 80GB HBM3 (2026-11-27)


class NVMLError(Exception):
    """Like pynvml.NVMLError: carries NVML's error code in ``value``."""

    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value


class FakeNvml:
    """The part of pynvml's interface GpuReader uses, with scriptable devices and failures."""

    NVML_TEMPERATURE_GPU = 0
    NVML_DEVICE_MIG_ENABLE = 1
    NVMLError = NVMLError

    def __init__(self, devices=(), init_error=None):
        self.devices = [dict(d) for d in devices]
        self.init_error = init_error
        self.inits = 0
        self.shutdowns = 0
        self.fail_utilization_with = None  # an NVML code raised mid-run
        self.hang = None  # a threading.Event: utilisation reads wait for it (a stuck driver)

    def nvmlInit(self):
        self.inits += 1
        if self.init_error is not None:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.devices[i]

    def nvmlDeviceGetName(self, h):
        return h["name"]

    def nvmlDeviceGetUtilizationRates(self, h):
        if self.hang is not None:
            self.hang.wait()
        if self.fail_utilization_with is not None:
            raise NVMLError(self.fail_utilization_with)
        if "util" not in h:  # a MIG device, a GPU in MIG mode, some virtual GPUs
            raise NVMLError(3)  # NVML_ERROR_NOT_SUPPORTED
        return SimpleNamespace(gpu=h["util"], memory=0)

    # MIG: a device dict with "mig_mode" (0 or 1; absent: a GPU without MIG, which
    # answers NOT_SUPPORTED) and "migs", its slots (a MIG device's dict, or None).
    def nvmlDeviceGetMigMode(self, h):
        if "mig_mode" not in h:
            raise NVMLError(3)
        return (h["mig_mode"], h["mig_mode"])

    def nvmlDeviceGetMaxMigDeviceCount(self, h):
        return len(h.get("migs", ()))

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, index):
        mig = h["migs"][index]
        if mig is None:
            raise NVMLError(6)  # NVML_ERROR_NOT_FOUND: no MIG device in this slot
        return mig

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(used=h["used"], total=h["total"], free=h["total"] - h["used"])

    def nvmlDeviceGetTemperature(self, h, sensor):
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self._maybe(h, "temp")

    def nvmlDeviceGetPowerUsage(self, h):
        return self._maybe(h, "power_mw")

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return self._maybe(h, "limit_mw")

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in h.get("procs", ())]

    @staticmethod
    def _maybe(h, key):
        if key not in h:
            raise NVMLError(3)  # NVML_ERROR_NOT_SUPPORTED
        return h[key]


H100 = {
    "name": b"NVIDIA H100 80GB HBM3",  # older pynvml returns bytes
    "util": 87,
    "used": 30 * GB,
    "total": H100_TOTAL,
    "temp": 61,
    "power_mw": 310_500,
    "limit_mw": 700_000,
    "procs": [(100, 20 * GB), (101, 2 * GB), (555, 8 * GB)],
}
# An H100 in MIG mode: a 3g.40gb and a 1g.10gb device in slots 0 and 2 (slot 1 empty).
# NVML gives no utilisation for the GPU or its MIG devices; temperature and power are
# the GPU's. The GPU's own memory figures are the sum; its processes need permission.
H100_MIG = {
    "name": "NVIDIA H100 80GB HBM3",
    "used": 13 * GB,
    "total": H100_TOTAL,
    "temp": 48,
    "power_mw": 180_000,
    "limit_mw": 700_000,
    "mig_mode": 1,
    "migs": [
        {
            "name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
            "used": 12 * GB,
            "total": 40 * GB,
            "procs": [(100, 11 * GB), (555, 1 * GB)],
        },
        None,
        {"name": "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "used": GB // 2, "total": 10 * GB},
    ],
}
T4 = {"name": "Tesla T4", "util": 3, "used": 1 * GB, "total": 16 * GB, "procs": []}
