"""bench/real_corpus.py builds the same corpus from the same commits, and keeps only what
reads like a memory (no trailers, no duplicates, no one-word subjects)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench import real_corpus

BODY = (
    "The old code compared remote names without regard to case, but the configuration "
    "treats the second part of the key as case sensitive, so two remotes collided."
)


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@pytest.fixture
def source(tmp_path: Path) -> tuple[str, str]:
    repo = tmp_path / "src"
    repo.mkdir()
    git(repo, "init", "-q")
    messages = [
        f"Teach the parser to accept option number {i} from the command line" for i in range(12)
    ]
    messages += [
        "Fix typo",  # too short: dropped
        "Teach the parser to accept option number 3 from the command line",  # duplicate
        f"Compare remote nicknames case sensitively [ci skip]\n\n{BODY}\n\nSigned-off-by: A <a@b.c>\n",
    ]
    for message in messages:
        git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return str(repo / ".git"), git(repo, "rev-parse", "HEAD")


def test_build_is_deterministic_and_keeps_memory_like_texts(
    source: tuple[str, str], tmp_path: Path
) -> None:
    git_dir, head = source
    first = real_corpus.build({"git": git_dir}, tmp_path / "a", 13, 1, pins={"git": head})
    again = real_corpus.build({"git": git_dir}, tmp_path / "b", 13, 1, pins={"git": head})
    assert first == again
    assert (tmp_path / "a" / "corpus.jsonl").read_bytes() == (
        tmp_path / "b" / "corpus.jsonl"
    ).read_bytes()
    rows = [json.loads(line) for line in (tmp_path / "a" / "corpus.jsonl").open()]
    texts = [r["text"] for r in rows]
    assert len(texts) == len(set(texts)) == 13
    assert "Fix typo" not in texts
    assert "Compare remote nicknames case sensitively" in texts  # [ci skip] is gone
    (query,) = [json.loads(line) for line in (tmp_path / "a" / "queries.jsonl").open()]
    assert query["query"] == BODY  # the body's first paragraph, without its sign-off
    assert texts[query["target"]] == "Compare remote nicknames case sensitively"
    with pytest.raises(SystemExit):
        real_corpus.build({"git": git_dir}, tmp_path / "c", 14, 1, pins={"git": head})
