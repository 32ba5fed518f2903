"""Comments and docstrings state the rule, so they stay true when the figures move: none cites a
section or an issue (renumbered or closed, the reference rots silently) or a millisecond figure
(measured once, on one machine). The figures live in docs/performance.md."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from tests.support.paths import ROOT

CHECKED = (ROOT / "agent_memory", ROOT / "migrations", ROOT / "tests" / "support")
CITATION = re.compile(
    r"\bsections?\s+\d|§|\bissues?\s+\d|\d[\d,.]*\s*(?:ms|milliseconds?)\b", re.IGNORECASE
)


def prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring line of a module's source."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                first = node.body[0].lineno
                found += [(first + i, line) for i, line in enumerate(doc.splitlines())]
    return sorted(found)


def citations(root: Path) -> list[str]:
    return [
        f"{path.relative_to(root)}:{line}: {text.strip()}"
        for path in sorted(root.rglob("*.py"))
        for line, text in prose(path.read_text(encoding="utf-8"))
        if CITATION.search(text)
    ]


def test_no_comment_cites_a_section_an_issue_or_a_timing():
    assert [c for root in CHECKED for c in citations(root)] == []


def test_the_check_sees_each_kind(tmp_path):
    (tmp_path / "m.py").write_text(
        '"""Docs, section 3."""\n'
        "# see issue 34\n"
        "X = 1  # \u00a7 2\n"
        "def f():\n"
        '    """Took 12.5 ms at 100,000 memories."""\n'
        "# a rule, with 2 seconds and a msg: fine\n",
        encoding="utf-8",
    )
    assert [c.split(":")[1] for c in citations(tmp_path)] == ["1", "2", "3", "5"]
