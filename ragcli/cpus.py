"""How many CPUs to use: those this process may run on, and for the model's threads the cores among
them that other programs leave free.

llama.cpp splits every step of the model across its threads, which wait for each other at each step:
one thread sharing its core with another busy program holds all the others up. Measured here (2 cores,
another program keeping one busy): `ragcli ask` took 94 s on two threads and 6 s on one. So unless
``--threads`` says otherwise the model runs on the physical cores (hyperthreads share a core's units:
llama.cpp's own default), less those other programs kept busy since the last look (``FreeCpus``,
Linux's /proc/stat; programs running at a lower priority, ``nice``, are not counted: they give way), and
no more than a cgroup's CPU quota allows (a container's ``--cpus``: on a 16-core host limited to 2 CPUs,
16 threads are held up at each step whenever the quota runs out). Cheap to import: nothing but the
standard library.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["FreeCpus", "available_cpus", "cpu_quota", "model_cores", "model_threads", "physical_cores"]

PROC_STAT = Path("/proc/stat")
SELF_STAT = Path("/proc/self/stat")
TOPOLOGY = Path("/sys/devices/system/cpu")
CGROUP = Path("/proc/self/cgroup")
MOUNTINFO = Path("/proc/self/mountinfo")
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
    """CPUs this process may run on, no more than its CPU quota's (what `index --jobs 0` uses)."""
    return _within_quota(len(our_cpus()))


def model_cores() -> int:
    """The model's threads where other programs leave every core free: the physical cores of our CPUs, no
    more than the CPU quota's."""
    return _within_quota(physical_cores())


def _within_quota(n: int) -> int:
    quota = cpu_quota()
    return max(1, n if quota is None else min(n, int(quota)))


def cpu_quota() -> float | None:
    """The CPUs' worth of time a cgroup lets this process use (a container's ``--cpus``, systemd's
    ``CPUQuota=``): the least of its cgroup's and those above it, cgroup v2 or v1; None where none is set
    or it cannot be read (not Linux: what these files hold never stops a question)."""
    try:
        groups = CGROUP.read_text().splitlines()
        mounts = [line.split() for line in MOUNTINFO.read_text().splitlines()]
    except OSError:
        return None
    quotas = []
    for line in groups:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        v2 = not controllers  # "0::/user.slice/…"; v1: "4:cpu,cpuacct:/docker/…"
        if not path.startswith("/") or not v2 and "cpu" not in controllers.split(","):
            continue
        for root, point in _cgroup_mounts(mounts, v2):
            if root == "/" or path == root or path.startswith(root + "/"):  # (a container sees its own root)
                folder = point / path[len(root.rstrip("/")):].lstrip("/")
                quotas += _quotas_up(folder, point, v2)
    return min(quotas) if quotas else None


def _cgroup_mounts(mounts: list[list[str]], v2: bool) -> list[tuple[str, Path]]:
    """(the cgroup mounted, where) for each cgroup v2 mount, or v1 mount with the cpu controller."""
    found = []
    for fields in mounts:  # "36 25 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,… - cgroup cgroup rw,cpu,cpuacct"
        if "-" not in fields[6:]:
            continue
        kind = fields[fields.index("-", 6) + 1:]
        if len(kind) >= 3 and (kind[0] == "cgroup2" if v2 else kind[0] == "cgroup" and "cpu" in kind[2].split(",")):
            found.append((fields[3], Path(fields[4].replace("\\040", " "))))
    return found


def _quotas_up(folder: Path, top: Path, v2: bool) -> list[float]:
    """The quotas set on ``folder`` and the folders above it up to ``top``, in CPUs."""
    quotas = []
    while True:
        try:
            if v2:  # cpu.max: "max 100000" (none), or "200000 100000" (2 CPUs)
                quota, period = (folder / "cpu.max").read_text().split()[:2]
            else:  # -1: none
                quota, period = ((folder / f"cpu.cfs_{name}_us").read_text() for name in ("quota", "period"))
            if quota != "max" and int(quota) > 0 and int(period) > 0:
                quotas.append(int(quota) / int(period))
        except (OSError, ValueError):
            pass
        if folder == top or top not in folder.parents:
            return quotas
        folder = folder.parent


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
