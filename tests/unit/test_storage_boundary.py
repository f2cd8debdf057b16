"""EventStore is the only place with DDL and database drivers (../shared/architecture.json):
no `CREATE TABLE` (nor index, trigger, virtual table) and no psycopg/sqlite3 import
outside eventstore/, without exception (the raw archive's pack index is a port in
workers, `workers.archive.packs.PackIndex`, with its SQLite adapter in eventstore)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("domain", "eventstore", "projections", "workers", "runtime", "streams", "api",
         "analytics", "simulator", "ledger")
#: the storage adapters: the read-model and event-store databases, the side tables
ADAPTERS = ("eventstore/",)
DDL = re.compile(r"\bCREATE\s+(?:UNIQUE\s+|VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER)\b")
DRIVERS = ("psycopg", "psycopg_pool", "sqlite3")


def modules(root: Path) -> list[tuple[str, str]]:
    """(path relative to `root`, text) of every module of the parts."""
    return [(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
            for part in PARTS for path in sorted((root / part).rglob("*.py"))]


def allowed(path: str) -> bool:
    return path.startswith(ADAPTERS)


def ddl_outside_adapters(root: Path) -> list[str]:
    return [f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
            for path, text in modules(root) if not allowed(path)
            for m in DDL.finditer(text)]


def drivers_outside_adapters(root: Path) -> list[str]:
    found = []
    for path, text in modules(root):
        if allowed(path):
            continue
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            found += [f"{path}:{node.lineno} imports {name}" for name in names
                      if name.split(".")[0] in DRIVERS]
    return found


def test_no_ddl_outside_the_storage_adapters() -> None:
    found = ddl_outside_adapters(ROOT)
    assert not found, "DDL outside eventstore/ (define tables there): " + ", ".join(found)


def test_no_database_driver_imported_outside_the_storage_adapters() -> None:
    found = drivers_outside_adapters(ROOT)
    assert not found, "database driver outside eventstore/: " + ", ".join(found)


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    (tmp_path / "runtime").mkdir()
    (tmp_path / "eventstore").mkdir()
    (tmp_path / "runtime" / "store.py").write_text(
        "def f(tx):\n    import psycopg\n    from sqlite3 import connect\n"
        "    tx.execute('CREATE TABLE IF NOT EXISTS t (a TEXT)')\n"
        "    tx.execute(f'CREATE VIRTUAL TABLE {x} USING fts5(a)')\n")
    (tmp_path / "eventstore" / "adapter.py").write_text(
        "import psycopg\nSQL = 'CREATE TABLE IF NOT EXISTS t (a TEXT)'\n")
    assert ddl_outside_adapters(tmp_path) == ["runtime/store.py:4", "runtime/store.py:5"]
    assert drivers_outside_adapters(tmp_path) == ["runtime/store.py:2 imports psycopg",
                                                  "runtime/store.py:3 imports sqlite3"]
