"""How many CPUs this process may use: its CPU affinity, capped by its cgroup's CPU quota.

A container limited with `docker run --cpus 1` (or a Kubernetes CPU limit) sees every
core of its host in its affinity mask; what limits it is the quota of its cgroup
(`cpu.max` in cgroup v2, `cpu.cfs_quota_us` / `cpu.cfs_period_us` in v1), the time it
may run per period summed over its threads and processes. The quota of every
ancestor cgroup applies too: the smallest counts.

    available_cpus()    # e.g. 1.0 under --cpus 1 on a 16-core host; 2 with no quota

Unreadable or missing files mean "no quota" (a host without cgroups, another OS).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["available_cpus", "cgroup_quota"]

_PROC = Path("/proc/self/cgroup")
_CGROUP = Path("/sys/fs/cgroup")


def available_cpus(proc_cgroup: Path = _PROC, cgroup_root: Path = _CGROUP) -> float:
    """The CPUs this process may use: its affinity (the machine's count where there is
    none), capped by its cgroup's quota (`cgroup_quota`)."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere the machine's count
    cores = float(len(affinity(0)) if affinity is not None else os.cpu_count() or 1)
    quota = cgroup_quota(proc_cgroup, cgroup_root)
    return cores if quota is None else min(cores, quota)


def cgroup_quota(proc_cgroup: Path = _PROC, cgroup_root: Path = _CGROUP) -> float | None:
    """The smallest CPU quota (CPUs' worth of time a period) of this process's cgroup and
    its ancestors, cgroup v2 or v1; None when none is set or none can be read."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    quotas: list[float] = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if line.startswith("0::"):  # the v2 hierarchy
            mount = cgroup_root if (cgroup_root / "cgroup.controllers").exists() \
                else cgroup_root / "unified"
            quotas += _walk(mount, path, _v2_quota)
        elif "cpu" in controllers.split(","):
            v1 = next((cgroup_root / name for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu")
                       if (cgroup_root / name).is_dir()), None)
            if v1 is not None:
                quotas += _walk(v1, path, _v1_quota)
    return min(quotas) if quotas else None


def _walk(mount: Path, path: str, read: Callable[[Path], float | None]) -> list[float]:
    """The quotas from the process's cgroup directory up to the mount's root. Inside a
    container the path names the host's hierarchy while the mount is the container's own
    cgroup: where the path is not under the mount, the mount's root is the cgroup."""
    here = mount / path.strip("/")
    if not here.is_dir():
        here = mount
    found: list[float] = []
    while True:
        quota = read(here)
        if quota is not None:
            found.append(quota)
        if here == mount or mount not in here.parents:
            return found
        here = here.parent


def _v2_quota(directory: Path) -> float | None:
    """`cpu.max`: "max 100000" (no quota) or "<quota> <period>" in microseconds."""
    try:
        quota, period = (directory / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return _ratio(quota, period)


def _v1_quota(directory: Path) -> float | None:
    """`cpu.cfs_quota_us` (-1: no quota) over `cpu.cfs_period_us`."""
    try:
        quota = (directory / "cpu.cfs_quota_us").read_text().strip()
        period = (directory / "cpu.cfs_period_us").read_text().strip()
    except OSError:
        return None
    return _ratio(quota, period)


def _ratio(quota: str, period: str) -> float | None:
    try:
        value, every = int(quota), int(period)
    except ValueError:  # "max"
        return None
    return value / every if value > 0 and every > 0 else None
