"""How many CPUs to use: those this process may run on, and for the model's threads the cores among
them that other programs leave free.

llama.cpp splits every step of the model across its threads, which wait for each other at each step:
one thread sharing its core with another busy program holds all the others up. Measured here (2 cores,
another program keeping one busy): `ragcli ask` took 94 s on two threads and 6 s on one. So unless
``--threads`` says otherwise the model runs on the physical cores (hyperthreads share a core's units:
llama.cpp's own default), less those other programs kept busy since the last look (``FreeCpus``,
Linux's /proc/stat; programs running at a lower priority, ``nice``, are not counted: they give way).
Cheap to import: nothing but the standard library.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["FreeCpus", "available_cpus", "model_threads", "physical_cores"]

PROC_STAT = Path("/proc/stat")
SELF_STAT = Path("/proc/self/stat")
TOPOLOGY = Path("/sys/devices/system/cpu")
MIN_INTERVAL_S = 0.2  # a look sooner than this after the last one keeps the last answer (ticks are 10 ms)
FIRST_INTERVAL_S = 0.05  # the first look waits for this much time at least (a model loaded from the page cache)
STALE_S = 5.0  # a look this long after the last one looks afresh, over FIRST_INTERVAL_S
KEEP_FREE = 0.75  # of a core another program uses: more than a quarter of a core, and the core is not free


def our_cpus() -> set[int]:
    """The CPUs this process may run on."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def available_cpus() -> int:
    """CPUs this process may run on (what `index --jobs 0` uses)."""
    return max(1, len(our_cpus()))


def physical_cores(cpus: set[int] | None = None) -> int:
    """The cores the CPUs ``cpus`` (ours by default) are on, each counted once however many
    hyperthreads it runs (Linux's topology files); where those cannot be read, the number of CPUs."""
    cpus = our_cpus() if cpus is None else cpus
    cores = set()
    for cpu in cpus:
        try:
            cores.add((TOPOLOGY / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip())
        except OSError:
            return max(1, len(cpus))
    return max(1, len(cores))


def model_threads(limit: int, free: float | None) -> int:
    """Threads for the model: ``limit`` (the physical cores), fewer where only ``free`` cores are
    left by other programs (None: not known), one at least."""
    if free is None:
        return max(1, limit)
    return max(1, min(limit, int(free + 1 - KEEP_FREE)))


class FreeCpus:
    """The cores among ours that other programs left free since the last look: ``look()`` gives them
    (a float, in cores) from /proc/stat's busy time on our CPUs less this process's own; None where
    that cannot be read (not Linux) or no time has passed."""

    def __init__(self) -> None:
        self._cpus = our_cpus()
        self._last = self._sample()
        self._free: float | None = None

    def look(self) -> float | None:
        if self._free is not None and self._last is not None and time.monotonic() - self._last[0] < MIN_INTERVAL_S:
            return self._free  # (no /proc read: called before every generation call)
        now = self._sample()
        if now is None or self._last is None:
            return None
        if now[0] - self._last[0] > STALE_S:  # (a REPL left idle: what ran meanwhile may have ended, or begun)
            self._last = now
        if self._free is None or self._last is now:  # a first look this soon, or afresh: a moment more
            time.sleep(max(0.0, FIRST_INTERVAL_S - (now[0] - self._last[0])))
            now = self._sample() or now
        elif now[0] - self._last[0] < MIN_INTERVAL_S:
            return self._free
        seconds = now[0] - self._last[0]
        if seconds <= 0:
            return self._free
        ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        others = max(0.0, (now[1] - self._last[1]) - (now[2] - self._last[2])) / ticks / seconds
        self._last = now
        self._free = max(0.0, len(self._cpus) - others)
        return self._free

    def _sample(self) -> tuple[float, int, int] | None:
        """(time, busy ticks of our CPUs at normal priority or above, this process's ticks); None where
        those files cannot be read, or read as expected (what they hold never stops a question)."""
        try:
            return self._parse(PROC_STAT.read_text(), SELF_STAT.read_text())
        except (OSError, ValueError, IndexError):
            return None

    def _parse(self, stat: str, own: str) -> tuple[float, int, int]:
        busy = 0
        for line in stat.splitlines():
            if not line.startswith("cpu") or line[3:4] == " ":
                continue
            name, *fields = line.split()
            if int(name[3:]) in self._cpus and len(fields) >= 8:
                user, _nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
                busy += user + system + irq + softirq + steal  # user includes guest time; nice left out
        # utime and stime, after the command name (which may hold spaces and parentheses)
        fields = own[own.rindex(")") + 2:].split()
        return time.monotonic(), busy, int(fields[11]) + int(fields[12])
