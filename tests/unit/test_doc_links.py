"""Every link between the guide and docs/ lands: the file exists and, when the link names a
heading, the file has that heading (GitHub's anchors), so a renamed section cannot leave a link
pointing nowhere."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^()\s]+?\.md)?(?:#([^()\s]+))?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]|\[([^]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.add(anchor(match.group(1)))
    return found


def broken(paths: list[Path]) -> list[str]:
    bad = []
    for path in paths:
        for target, name in LINK.findall(path.read_text(encoding="utf-8")):
            if target.startswith(("http:", "https:")) or not (target or name):
                continue
            linked = (path.parent / target).resolve() if target else path
            if not linked.exists():
                bad.append(f"{path.name}: {target}")
            elif name and name not in anchors(linked):
                bad.append(f"{path.name}: {target}#{name}")
    return bad


def test_every_link_between_the_docs_lands():
    assert broken(DOCS) == []


def test_the_check_sees_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "a.md").write_text("# A title\n\n## Its `part`, here\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(
        "[ok](a.md#its-part-here) [ok](#b) [gone](c.md) [moved](a.md#3-old-section)\n# B\n",
        encoding="utf-8",
    )
    assert broken([tmp_path / "b.md"]) == ["b.md: c.md", "b.md: a.md#3-old-section"]
