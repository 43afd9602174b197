"""Every link a reader follows resolves: the Markdown links between the repository's documents (file and
`#anchor`), and the prose references `docs/<page>.md, "<Section>"` that the docs, the code and the plan
notes it writes (seen in the golden files) give, so moving a section never leaves a dead pointer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md")])
# Where prose references to docs pages appear: the documents, the code (comments, messages, plan notes),
# and what the code wrote (the golden plans, reports and renderings).
REFERRING = sorted({*DOCUMENTS, *(ROOT / "gpustack").rglob("*.py"),
                    *(p for p in (ROOT / "tests" / "golden").rglob("*") if p.is_file())})
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
# `docs/page.md "Section"`, `docs/page.md, "Section"` (quotes escaped in JSON goldens too) on one line;
# the section may be the start of a longer heading.
_SECTION_REFERENCE = re.compile(r"docs/([\w.-]+\.md),? \\?\"([^\"\\\n]+)\\?\"")
_PAGE_REFERENCE = re.compile(r"\bdocs/([\w-]+\.md)\b")


def anchor_of(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation but '-' and '_' dropped, spaces as '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def headings(path: Path) -> list[str]:
    """The document's headings in order, skipping fenced code (a `# comment` there is no heading)."""
    found, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+?)\s*#*\s*$", line)):
            found.append(match.group(1))
    return found


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub gives the document's headings (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(path):
        base = anchor_of(heading)
        count = seen.get(base, 0)
        out.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return out


def _links(path: Path) -> list[str]:
    text, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            text.append(line)
    return _LINK.findall("\n".join(text))


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_of_a_document_resolves(document):
    dead = []
    for target in _links(document):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto: and the like: not the repository's
        file, _, anchor = target.partition("#")
        path = (document.parent / file).resolve() if file else document
        if not path.exists():
            dead.append(f"{target}: no file {file}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            dead.append(f"{target}: {path.name} has no heading with anchor #{anchor}")
    assert not dead, dead


def test_every_docs_page_and_section_named_in_prose_or_plan_notes_exists():
    dead = []
    for path in REFERRING:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        where = path.relative_to(ROOT)
        for page in _PAGE_REFERENCE.findall(text):
            if not (ROOT / "docs" / page).is_file():
                dead.append(f"{where}: docs/{page} does not exist")
        for page, section in _SECTION_REFERENCE.findall(text):
            target = ROOT / "docs" / page
            if target.is_file() and not any(h.startswith(section) for h in headings(target)):
                dead.append(f"{where}: docs/{page} has no section {section!r}")
    assert not dead, dead


def test_a_moved_section_is_caught(tmp_path):
    """The checks above can fail: a reference to a section the page lacks is reported."""
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Kept `here`: yes\n\n```\n# not a heading\n```\n", encoding="utf-8")
    assert headings(page) == ["Title", "Kept `here`: yes"]
    assert anchors(page) == {"title", "kept-here-yes"}
    assert _SECTION_REFERENCE.findall('(docs/page.md, \\"Gone\\"; x)') == [("page.md", "Gone")]
