"""How a worker process ended, in words, and ending what its run left behind.

Used by the viewer's side of a run (``core/process.py``): a worker that dies without
reporting its run's end gets a status and a reason (a signal, the kernel's OOM killer,
``os._exit``); every process the run started carries :data:`RUN_TOKEN_ENV` and is
found by it and ended with the run.
"""

from __future__ import annotations

import os
import signal

# Every process a run starts inherits this variable (its value names the worker):
# whatever of them outlives the run is found by it and ended, whichever process
# group it is in (``tfstudio run`` shares the terminal's group, so killpg misses them).
RUN_TOKEN_ENV = "TFSTUDIO_RUN_TOKEN"

# Where the kernel counts its out-of-memory kills (dmesg needs privileges; these do not).
_OOM_COUNTERS = (
    ("/proc/vmstat", "oom_kill"),  # the whole machine (Linux >= 4.13)
    ("/sys/fs/cgroup/memory.events", "oom_kill"),  # this container, cgroup v2
    ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),  # this container, cgroup v1
)


def oom_kill_count() -> int | None:
    """How many processes the kernel's OOM killer has ended (None where no counter is readable).

    The sum of every counter found: a worker that dies of SIGKILL while this grows
    was, in all likelihood, the one the kernel chose.
    """
    total = None
    for path, key in _OOM_COUNTERS:
        try:
            with open(path, encoding="ascii") as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == key:
                        total = (total or 0) + int(value)
                        break
        except (OSError, ValueError):
            continue
    return total


def kill_run_processes(token: str) -> list[int]:
    """SIGKILL every other process that carries ``token`` in its environment; returns their pids.

    Args:
        token: the value of ``RUN_TOKEN_ENV`` the run's worker was started with.
    """
    try:
        import psutil
    except ImportError:  # pragma: no cover - a dependency; without it groups still go
        return []
    killed = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        pid = proc.info["pid"]
        if pid == me:
            continue
        try:
            if proc.environ().get(RUN_TOKEN_ENV) != token:
                continue
            proc.kill()
            killed.append(pid)
        except (psutil.Error, OSError):
            continue
    return killed


def describe_exit(
    returncode: int, *, killed_by_us: str | None = None, oom_killed: bool | None = None
) -> tuple[str, int, str]:
    """Status, exit code and reason for a worker that ended without reporting its run's end.

    Args:
        returncode: ``Popen.returncode`` (negative: killed by that signal).
        killed_by_us: the signal name when Stop escalated to it.
        oom_killed: the kernel's OOM-kill counter grew while the run lived (None: unknown).
    """
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        text = (signal.strsignal(sig) or name).lower()
        if killed_by_us:
            return (
                "stopped",
                128 + sig,
                f"the script did not stop at a batch boundary; its process was ended with {name}",
            )
        if sig == signal.SIGKILL and oom_killed:
            reason = (
                "the script's process was killed by the kernel's out-of-memory killer "
                "(SIGKILL): the machine or container ran out of memory; use less memory "
                "(smaller batches or model, fewer prefetched batches) or allow more"
            )
        elif sig == signal.SIGKILL and oom_killed is False:
            reason = (
                "the script's process was killed (SIGKILL) from outside; "
                "the kernel's out-of-memory killer did not act"
            )
        elif sig == signal.SIGKILL:
            reason = "the script's process was killed (SIGKILL; out of memory?)"
        elif sig == signal.SIGTERM:
            reason = "the script's process was terminated (SIGTERM)"
        elif sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
            reason = f"the script's process crashed: signal {sig}, {text} ({name})"
        else:
            reason = f"the script's process ended by signal {sig}, {text} ({name})"
        return "failed", 128 + sig, reason
    status = "finished" if returncode == 0 else "failed"
    return status, returncode, f"the script's process exited with os._exit({returncode})"
