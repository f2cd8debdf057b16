"""`ledger.host.cpus`: the CPU quota of the process's cgroup, v2 and v1, over file trees laid
out as `/proc/self/cgroup` and `/sys/fs/cgroup` are (the real v1 hierarchy was checked by
hand: a shell moved into a cgroup with a 1.5-CPU quota got 1.5, with 0.5 got 0.5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger.host.cpus import available_cpus, cgroup_quota


def tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    return tmp_path / "proc-self-cgroup"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "cg").mkdir()
    return tmp_path / "cg"


#: (id, /proc/self/cgroup, the files under the cgroup mount, the quota expected)
LAYOUTS = [
    ("v2: the process's cgroup", "0::/app.slice/crawl.service\n",
     {"cgroup.controllers": "cpu io memory", "cpu.max": "max 100000\n",
      "app.slice/cpu.max": "max 100000\n",
      "app.slice/crawl.service/cpu.max": "150000 100000\n"}, 1.5),
    ("v2: the smallest of the ancestors", "0::/app.slice/crawl.service\n",
     {"cgroup.controllers": "cpu", "app.slice/cpu.max": "50000 100000\n",
      "app.slice/crawl.service/cpu.max": "max 100000\n"}, 0.5),
    ("v2: no quota anywhere", "0::/app.slice\n",
     {"cgroup.controllers": "cpu", "cpu.max": "max 100000\n",
      "app.slice/cpu.max": "max 100000\n"}, None),
    # a container sees the host's path in /proc/self/cgroup, its own cgroup at the root
    ("v2: inside a container", "0::/system.slice/docker-0123abcd.scope\n",
     {"cgroup.controllers": "cpu", "cpu.max": "100000 100000\n"}, 1.0),
    # v1 for cpu beside a v2 mount without the cpu controller (this machine's layout)
    ("v1: hybrid hierarchy", "4:memory:/x\n2:cpu,cpuacct:/batch\n0::/\n",
     {"unified/cgroup.controllers": "hugetlb",
      "cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
      "cpu,cpuacct/batch/cpu.cfs_quota_us": "200000\n",
      "cpu,cpuacct/batch/cpu.cfs_period_us": "100000\n"}, 2.0),
    ("v1: no quota", "1:cpu:/\n",
     {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
]


@pytest.mark.parametrize(("cgroup", "files", "quota"), [case[1:] for case in LAYOUTS],
                         ids=[case[0] for case in LAYOUTS])
def test_the_quota_of_each_layout(proc: Path, root: Path, cgroup: str,
                                  files: dict[str, str], quota: float | None) -> None:
    proc.write_text(cgroup)
    tree(root, files)
    assert cgroup_quota(proc, root) == quota


@pytest.mark.parametrize("files", [
    {},  # no cgroup files at all
    {"cgroup.controllers": "cpu", "cpu.max": "garbage\n"},
    {"cgroup.controllers": "cpu", "cpu.max": "100000 0\n"},
])
def test_unreadable_or_odd_files_mean_no_quota(proc: Path, root: Path,
                                              files: dict[str, str]) -> None:
    proc.write_text("0::/\n")
    tree(root, files)
    assert cgroup_quota(proc, root) is None


def test_no_proc_file_means_no_quota(tmp_path: Path) -> None:
    assert cgroup_quota(tmp_path / "missing", tmp_path) is None


def test_available_cpus_is_the_affinity_capped_by_the_quota(
        proc: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    proc.write_text("0::/\n")
    tree(root, {"cgroup.controllers": "cpu", "cpu.max": "max 100000\n"})
    assert available_cpus(proc, root) == 4.0
    (root / "cpu.max").write_text("100000 100000\n")
    assert available_cpus(proc, root) == 1.0
    (root / "cpu.max").write_text("800000 100000\n")  # a quota above the cores it may use
    assert available_cpus(proc, root) == 4.0
