"""The System view's figures (the text above its plots) for the live run and a reopened
one, and a reopened run's step times: a part of
:class:`~tfstudio.ui.panels.system.SystemPanel` kept apart so each module has one job.
"""

from __future__ import annotations

import html

import numpy as np

from tfstudio.core.run_model import RunModel
from tfstudio.core.system import format_bytes
from tfstudio.core.system_sampling import (
    GPU_MEMORY_TOTAL,
    GPU_MEMORY_USED,
    GPU_PROCESS_MEMORY,
    GPU_UTILIZATION,
    MACHINE_CPU,
    MACHINE_MEMORY,
    MACHINE_MEMORY_TOTAL,
    PROCESS_CPU,
    PROCESS_RSS,
    gpu_key,
    gpus_in,
    last_values,
    peak,
)

# Between two step hooks longer than this (and GAP_FACTOR x the usual step) the script
# did something else (evaluated, saved, built the next loop): a gap, not a slow step.
GAP_MIN_S = 1.0
GAP_FACTOR = 20.0


class SystemFigures:
    """The figures of :class:`SystemPanel` (a mixin: it uses the panel's model and samples)."""

    def _recorded_rows(self) -> list[tuple[str, str]]:
        """The figures of a reopened run: its last samples (and its peak memory)."""
        system = self.model.system
        last = last_values(system)
        if self.model.loading:
            return [("run", f"reading run '{html.escape(self.model.name)}' from its folder…")]
        if not last:
            return [("run", f"no system samples were recorded in run '{self.model.name}'")]
        rows = [("run", f"recorded in run '{html.escape(self.model.name)}'")]
        if PROCESS_RSS in last:
            rows.append(
                (
                    "last",
                    f"CPU <b>{last.get(PROCESS_CPU, 0):.0f}%</b> · RSS "
                    f"<b>{format_bytes(last[PROCESS_RSS])}</b> (peak "
                    f"{format_bytes(peak(system, PROCESS_RSS))}) · machine CPU "
                    f"{last.get(MACHINE_CPU, 0):.0f}%",
                )
            )
        if MACHINE_MEMORY in last:
            total = format_bytes(last.get(MACHINE_MEMORY_TOTAL))
            rows.append(("machine", f"memory {format_bytes(last[MACHINE_MEMORY])} / {total}"))
        for prefix in gpus_in(system):
            _, label = gpu_key(prefix)
            util = last.get(prefix + GPU_UTILIZATION)
            own = last.get(prefix + GPU_PROCESS_MEMORY)
            rows.append(
                (
                    label,
                    ("util n/a" if util is None else f"util <b>{util:.0f}%</b>")
                    + f" · memory {format_bytes(last.get(prefix + GPU_MEMORY_USED))} / "
                    + format_bytes(last.get(prefix + GPU_MEMORY_TOTAL))
                    + (f" · run <b>{format_bytes(own)}</b>" if own is not None else ""),
                )
            )
        return rows

    def _figures_html(self) -> str:
        rows: list[tuple[str, str]] = []
        if not self._shows_live():
            rows = self._recorded_rows()
            cells = "".join(
                f"<tr><td style='color:#6b6b6b; padding-right:8px'>{k}</td><td>{v}</td></tr>"
                for k, v in rows
            )
            return f"<table cellspacing='1'>{cells}</table>"
        if self.devices is not None:
            rows.append(("device", html.escape(self.devices.describe())))
        last = self.samples[-1] if self.samples else None
        if last is None:
            if self.sampler is not None and not self.sampler.available:
                rows.append(("run", "psutil is not installed: no CPU or memory figures"))
            elif not self.devices:
                rows.append(("run", "no run yet — figures appear when a run starts"))
        else:
            who = "this window's process" if self.pid == 0 else f"worker pid {last.pid}"
            if not last.alive:
                rows.append(("run", f"{who}: ended"))
            else:
                peak = max((s.process_rss or 0) for s in self.samples)
                kids = f" + {last.children} child" if last.children else ""
                rows.append(
                    (
                        "run",
                        f"CPU <b>{last.process_cpu or 0:.0f}%</b> · RSS "
                        f"<b>{format_bytes(last.process_rss)}</b> (peak {format_bytes(peak)})"
                        f"<br><span style='color:#7a7a7a'>{who}{kids}; 100% = one core</span>",
                    )
                )
            rows.append(
                (
                    "machine",
                    f"CPU {last.machine_cpu:.0f}% of {last.cpu_count} cores · memory "
                    f"{format_bytes(last.machine_memory_used)} / "
                    f"{format_bytes(last.machine_memory_total)}",
                )
            )
        for gpu in self.gpu_samples[-1] if self.gpu_samples else ():
            extras = []
            if gpu.temperature is not None:
                extras.append(f"{gpu.temperature:.0f} °C")
            if gpu.power is not None:
                limit = f" / {gpu.power_limit:.0f}" if gpu.power_limit else ""
                extras.append(f"{gpu.power:.0f}{limit} W")
            own = (
                f" · run <b>{format_bytes(gpu.process_memory)}</b>"
                if gpu.process_memory is not None
                else ""
            )
            if gpu.utilization is not None:
                util = f"util <b>{gpu.utilization:.0f}%</b>"
            else:  # NVML gives none for a MIG device (nor for some virtual GPUs)
                util = "util n/a" + (" (MIG)" if gpu.mig is not None else "")
            rows.append(
                (
                    gpu.label,
                    f"{html.escape(gpu.name)}<br>{util} · memory "
                    f"{format_bytes(gpu.memory_used)} / {format_bytes(gpu.memory_total)}{own}"
                    + (" · " + " · ".join(extras) if extras else ""),
                )
            )
        if self.tf_memory:
            latest = self.tf_memory[-1]
            for name, current, peak in zip(
                latest.devices, latest.current, latest.peak, strict=False
            ):
                rows.append(
                    (
                        "TensorFlow",
                        f"{html.escape(name)}: {format_bytes(current)} in use, "
                        f"peak {format_bytes(peak)}",
                    )
                )
        elif self.tf_note:
            rows.append(("TensorFlow", f"<span style='color:#7a7a7a'>GPU memory {self.tf_note}"))
        cells = "".join(
            f"<tr><td style='color:#6b6b6b; padding-right:8px'>{k}</td><td>{v}</td></tr>"
            for k, v in rows
        )
        return f"<table cellspacing='1'>{cells}</table>"


def recorded_step_ms(model: RunModel) -> tuple[np.ndarray, np.ndarray]:
    """A reopened run's step time (ms per step, at seconds since its start) from the times
    its steps were recorded at; a stretch far beyond the usual step (validation, the
    script between fits) is a gap, as live."""
    steps, secs = model.metrics.clock.points()
    if len(steps) < 2:
        return np.zeros(0), np.zeros(0)
    ds, dt = np.diff(steps), np.diff(secs)
    ok = (ds > 0) & (dt >= 0)
    ms = np.full(len(ds), np.nan)
    ms[ok] = 1000.0 * dt[ok] / ds[ok]
    usual = np.nanmedian(ms) if ok.any() else np.nan
    gaps = (dt > GAP_MIN_S) & (ms > GAP_FACTOR * usual)
    # a fit's first step (its trace) and an epoch's validation only start a measurement
    starts = [f.global_step for f in model.metrics.fits] + list(model.metrics.epoch_steps)
    gaps |= np.isin(steps[:-1], np.asarray(starts, dtype=np.float64))
    ms[gaps] = np.nan
    return secs[1:], ms
