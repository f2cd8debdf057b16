"""The image's install path: the wheel pyproject.toml builds holds every package.

The Dockerfile builds the wheel from the build context (the project minus
`.dockerignore`) and installs only that wheel, so a package the wheel lacks is a
package the image lacks. These tests build the wheel from such a context, check its
packages against the project's, and run `crawl-ledger jobs list` from it in a clean
virtualenv whose third-party dependencies are borrowed from the test environment
(installing them from PyPI would take minutes and the network; the wheel's own
code is what is under test).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def project_packages() -> set[str]:
    """Top-level directories of the project that are Python packages (tests aside)."""
    return {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(relative: str, patterns: list[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        if pattern.startswith("**/") and fnmatch.fnmatch(name, pattern[3:]):
            return True
        if fnmatch.fnmatch(relative, pattern) or ("/" not in pattern and "*" in pattern
                                                  and fnmatch.fnmatch(name, pattern)):
            return True
    return False


def build_context(target: Path) -> Path:
    """Copy the project as `docker build` would send it (tracked and untracked files
    alike, minus `.dockerignore`)."""
    patterns = dockerignore_patterns()

    def skip(directory: str, names: list[str]) -> set[str]:
        relative = Path(directory).relative_to(ROOT).as_posix()
        prefix = "" if relative == "." else relative + "/"
        return {n for n in names if ignored(prefix + n, patterns)}

    context = target / "context"
    shutil.copytree(ROOT, context, ignore=skip, symlinks=True)
    return context


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    context = build_context(work)
    out = work / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
         str(context)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    (built,) = out.glob("crawl_ledger-*.whl")
    return built


def test_the_build_context_holds_every_package() -> None:
    patterns = dockerignore_patterns()
    assert project_packages(), "no packages found"
    assert not {p for p in project_packages() if ignored(p, patterns)}


def test_the_wheel_holds_every_package_and_the_dashboard_files(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names if n.endswith(".py")}
    assert project_packages() <= top, f"missing from the wheel: {project_packages() - top}"
    assert any(n.startswith("api/templates/") and n.endswith(".html") for n in names)
    assert any(n.startswith("api/static/") for n in names)
    assert not any(n.startswith("tests/") for n in names)


def test_the_wheel_runs_jobs_list_in_a_clean_virtualenv(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # third-party dependencies only: a plain path line does not run this
    # environment's own .pth files, so its editable install of the project stays out
    (Path(site) / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["LEDGER_DATA_DIR"] = str(tmp_path / "data")
    (tmp_path / "data").mkdir()
    where = subprocess.run([str(python), "-c", "import ledger; print(ledger.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert where.stdout.strip().startswith(site), where.stdout + where.stderr
    binary = str(venv / "bin" / "crawl-ledger")
    added = subprocess.run([binary, "stores", "add", "Shop", "https://shop.example", "--platform",
                            "shopify"], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=120)
    assert added.returncode == 0, added.stderr[-2000:]
    result = subprocess.run([binary, "jobs", "list"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "jobs" in result.stdout.lower()


def test_the_dockerfile_builds_from_every_package() -> None:
    """Each package reaches the stage that runs `pip wheel`/`pip install`: the stage
    copies the whole context, or that package by name."""
    copied: set[str] = set()
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["FROM"]:
            copied = set()
        elif words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            copied |= {w.strip("./") or "." for w in words[1:-1]}
        elif words[:1] == ["RUN"] and "pip" in words and ("wheel" in words or "install" in words):
            if "." in copied or "/wheels/*.whl" in line:
                return
            missing = project_packages() - copied
            assert not missing, f"the Dockerfile installs without {sorted(missing)}"
            return
    pytest.fail("the Dockerfile runs no pip install")
