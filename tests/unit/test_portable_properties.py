"""Property-based: any valid corpus survives export -> import -> export; corruptions are refused."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.contract.errors import FormatTooNew, InvalidArgument
from agent_memory.contract.vocabulary import LINK_KINDS, MEMORY_TYPES
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transfer.portable import jsonl_reader
from tests.support.clock import Clock
from tests.support.tiers import examples

# Any text a store keeps: no lone surrogate, no NUL (both refused, tests/engines/test_nul.py).
TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40
)
CONTENT = TEXT.filter(lambda t: t.strip())
MEMORY = st.fixed_dictionaries(
    {"type": st.sampled_from(MEMORY_TYPES), "content": CONTENT, "tags": st.lists(TEXT, max_size=3)},
    optional={"source": st.none() | TEXT, "scope": st.none() | TEXT},
)
CORPUS = st.tuples(
    st.lists(
        MEMORY,
        min_size=1,
        max_size=12,
        unique_by=lambda m: (m["type"], m["content"], m.get("source")),
    ),
    st.lists(
        st.tuples(st.integers(0, 11), st.integers(0, 11), st.sampled_from(LINK_KINDS)), max_size=10
    ),
)
SETTINGS = settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def export_lines(svc) -> list[str]:
    lines: list[str] = []
    svc.export(lines.append)
    return lines


def build(directory: Path, corpus) -> list[str]:
    memories, links = corpus
    svc = MemoryService(open_store(directory / "a.db"), clock=Clock())
    try:
        ids = [svc.store(m)["id"] for m in memories]
        for a, b, kind in links:
            if a < len(ids) and b < len(ids) and a != b:
                svc.link({"from_id": ids[a], "to_id": ids[b], "kind": kind})
        return export_lines(svc)
    finally:
        svc.close()


def import_file(path: Path, db: Path) -> dict[str, int]:
    reader = jsonl_reader(path)
    reader.check()
    svc = MemoryService(open_store(db), clock=Clock())
    try:
        return svc.import_jsonl(reader)
    finally:
        svc.close()


@SETTINGS
@given(CORPUS)
def test_a_valid_corpus_survives_the_round_trip(corpus):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        first = build(directory, corpus)
        path = directory / "export.jsonl"
        path.write_text("".join(first), encoding="utf-8")
        report = import_file(path, directory / "b.db")
        assert report["imported"] == len(corpus[0])
        svc = MemoryService(open_store(directory / "b.db"), clock=Clock())
        try:
            second = export_lines(svc)
        finally:
            svc.close()
        # Same clock, ids given in the same order from 1: byte-identical, header included.
        assert second == first


CORRUPTIONS = ["drop", "duplicate", "truncate", "unknown field", "wrong type", "missing field"]


@SETTINGS
@given(CORPUS, st.sampled_from(CORRUPTIONS), st.data())
def test_a_corrupted_file_is_refused_and_nothing_is_written(corpus, corruption, data):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        lines = build(directory, corpus)
        index = data.draw(
            st.integers(1 if corruption in ("drop", "duplicate") else 0, len(lines) - 1)
        )
        record = json.loads(lines[index])
        if corruption == "drop":
            del lines[index]
        elif corruption == "duplicate":
            lines.insert(index, lines[index])
        elif corruption == "truncate":
            lines[index] = lines[index].rstrip("\n")[:-1] + "\n"
        else:
            name = data.draw(st.sampled_from(sorted(k for k in record if k != "record")))
            if corruption == "unknown field":
                record[name + "_x"] = 1
            elif corruption == "wrong type":
                record[name] = [record[name]] if not isinstance(record[name], list) else "x"
            else:
                if name in ("source", "scope", "expires_at", "created_by", "updated_by"):
                    return  # optional: leaving it out is allowed
                if name == "change_source":
                    return
                if name == "exported_versions":
                    return  # a version 1 header has none: read as 0, as this corpus holds
                del record[name]
            lines[index] = json.dumps(record) + "\n"
        path = directory / "broken.jsonl"
        path.write_text("".join(lines), encoding="utf-8")
        with pytest.raises((InvalidArgument, FormatTooNew)):
            jsonl_reader(path).check()
        assert not (directory / "b.db").exists()
