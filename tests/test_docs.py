"""The documentation stays true to the tree: every module is in the architecture map, the map
names no file that is gone, the README stays a short landing page (under 200 lines, none over 200
characters), and no relative link in the docs is broken.

Plain file reads: no database, broker or browser, so these run anywhere (and in `make test-fast`).
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"

# The packages the map covers: the layers import-linter checks (pyproject.toml).
PACKAGES = ("paintenv", "paintapp", "painting", "curation", "training", "system", "demo")
README_MAX_LINES = 200
README_MAX_LINE_CHARS = 200

# A path in backticks, as the map writes each module: `paintenv/gate.py`.
BACKTICKED_PY = re.compile(r"`([^`\s]+\.py)`")
# [text](target) and ![alt](target); a title after the target ("...") is allowed.
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCED_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def project_modules() -> list[str]:
    """Every Python module of the project's packages, as a path from the repository root.
    Migrations are generated history and `__init__.py` files hold no code worth a line."""
    found = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if path.name == "__init__.py" or "migrations" in relative.parts:
                continue
            found.append(relative.as_posix())
    return sorted(found)


def backticked_modules(text: str) -> set[str]:
    return set(BACKTICKED_PY.findall(text))


def relative_links(text: str) -> list[str]:
    """Link targets that name a file of this repository. Code is stripped first, so a sketch's
    `window["re"+"ct"](...)` in a code span is never read as a link."""
    prose = INLINE_CODE.sub("", FENCED_BLOCK.sub("", text))
    targets = []
    for target in MARKDOWN_LINK.findall(prose):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue  # http:, https:, mailto: and in-page anchors are not files
        targets.append(target.split("#", 1)[0])
    return targets


def broken_links(document: Path) -> list[str]:
    return [
        target for target in relative_links(document.read_text(encoding="utf-8"))
        if not (document.parent / target).exists()
    ]


def test_the_module_walk_finds_the_packages_it_should():
    # A walk that silently found nothing would make the map checks pass vacuously.
    modules = project_modules()
    assert "paintenv/gate.py" in modules
    assert "paintapp/lib/storage.py" in modules
    assert not [m for m in modules if m.endswith("__init__.py") or "/migrations/" in m]


def test_every_module_is_in_the_architecture_map():
    mapped = backticked_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    missing = [module for module in project_modules() if module not in mapped]
    assert not missing, f"add these to docs/architecture.md, each in backticks with one line: {missing}"


def test_every_module_the_architecture_map_names_exists():
    named = backticked_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    # A bare file name (`gate_rules.py`) is shorthand within a paragraph; only paths are checked.
    gone = sorted(path for path in named if "/" in path and not (ROOT / path).is_file())
    assert not gone, f"docs/architecture.md names files that do not exist: {gone}"


def test_the_readme_is_under_200_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES, (
        f"README.md has {len(lines)} lines; move reference material to docs/ and link it"
    )


def test_no_readme_line_is_longer_than_200_characters():
    lines = README.read_text(encoding="utf-8").splitlines()
    long = [number for number, line in enumerate(lines, 1) if len(line) > README_MAX_LINE_CHARS]
    assert not long, f"README.md lines over {README_MAX_LINE_CHARS} characters: {long}; wrap them or move the table to docs/"


def test_every_relative_link_in_the_readme_points_to_a_file():
    assert not broken_links(README)


def test_every_relative_link_in_the_docs_points_to_a_file():
    broken = {doc.name: broken_links(doc) for doc in sorted(DOCS.glob("*.md"))}
    assert not {name: links for name, links in broken.items() if links}


def test_the_link_reader_skips_code_and_web_addresses():
    text = (
        "[a](docs/a.md) ![b](docs/screenshots/b.png \"title\") [c](https://example.org) "
        "[d](#anchor) [e](docs/e.md#part) `x[\"y\"](z)`\n```\n[f](nowhere.md)\n```\n"
    )
    assert relative_links(text) == ["docs/a.md", "docs/screenshots/b.png", "docs/e.md"]
