"""The documentation's promises that code can check.

The README stays a short front page that links every page under `docs/`; every
relative link resolves; the architecture page names only modules that exist; the
tested consumer example is shown verbatim; no page reads like a lab journal.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 300

#: phrases that date a page to a moment instead of describing the system
HISTORY_PHRASES = ("this session", "at commit", "latest pass", "this week",
                   "the last pass", "before the change", "as of today")

#: the top-level packages of the project, whose dotted names the architecture page uses
PACKAGES = ("domain", "eventstore", "projections", "workers", "runtime", "streams",
            "api", "analytics", "simulator", "ledger", "tests", "bench")

LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATH_TOKEN = re.compile(r"^[\w.-]+(?:/[\w.-]+)*(?:\.py|/)$")
DOTTED_TOKEN = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.\w+)+(?:\(\))?$")


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    links = (m.group(1).split("#", 1)[0] for m in LINK.finditer(text))
    return [link for link in links if link and "://" not in link and not link.startswith("mailto:")]


def test_readme_is_a_front_page_not_a_manual() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = README.read_text()
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / link).resolve() for link in relative_links(README)}
    missing = [str(p.relative_to(ROOT)) for p in doc_pages() if p.resolve() not in linked]
    assert not missing, f"not linked from README.md: {missing}"


def test_every_relative_link_resolves() -> None:
    broken = [f"{page.relative_to(ROOT)} -> {link}"
              for page in [README, *doc_pages()]
              for link in relative_links(page)
              if not (page.parent / link).exists()]
    assert not broken, f"links to nothing: {broken}"


def test_no_page_reads_like_a_journal() -> None:
    found = [f"{page.relative_to(ROOT)}: {phrase!r}"
             for page in [README, *doc_pages()]
             for phrase in HISTORY_PHRASES
             if phrase in page.read_text().lower()]
    assert not found, f"history in the docs: {found}"


def test_the_services_page_shows_the_tested_consumer_example_verbatim() -> None:
    page = (DOCS / "services" / "kafka.md").read_text()
    example = (DOCS / "consumer_example.py").read_text()
    assert f"```python\n{example}```" in page


def test_architecture_names_only_files_that_exist() -> None:
    tokens = CODE_SPAN.findall((DOCS / "architecture.md").read_text())
    paths = [t for t in tokens if PATH_TOKEN.match(t) and "<" not in t]
    assert len(paths) >= 10, "the page should name the files it describes"
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_architecture_names_only_modules_that_exist() -> None:
    tokens = CODE_SPAN.findall((DOCS / "architecture.md").read_text())
    dotted = [t.removesuffix("()") for t in tokens if DOTTED_TOKEN.match(t)]
    assert len(dotted) >= 5, "the page should name the modules it describes"
    unknown = [name for name in dotted if not names_something(name)]
    assert not unknown, f"docs/architecture.md names modules that do not exist: {unknown}"


def names_something(dotted: str) -> bool:
    """A module (`a.b`), or a name defined in one (`a.b.Thing`, `a.thing`)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = module_file(parts[:cut])
        if module is not None:
            rest = parts[cut:]
            return not rest or defines(module, rest[0])
    return False


def module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def defines(module: Path, name: str) -> bool:
    pattern = rf"^\s*(?:async\s+def|def|class)\s+{name}\b|^{name}\s*[:=]|\bimport\b.*\b{name}\b"
    return re.search(pattern, module.read_text(), flags=re.M) is not None
