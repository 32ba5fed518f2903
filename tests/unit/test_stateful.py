"""Random sequences of every operation against the service and a plain model of the truth.

Hypothesis drives store, update, link, unlink, forget, search, list and sweep, valid and
not, on a real database file; after every step the database must say exactly what the
model says: the same memories with the same fields, the same relations, and nothing from
a rejected call.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from agent_memory.contract.errors import InvalidArgument, UnknownField
from agent_memory.contract.vocabulary import LINK_KINDS, MEMORY_TYPES
from agent_memory.query import read as read_query
from agent_memory.service.core import MemoryService
from agent_memory.service.lifecycle import sweep
from agent_memory.storage import open_store
from tests.support.clock import Clock
from tests.support.tiers import examples

# Any text a store keeps: no lone surrogate, no NUL (both refused, tests/engines/test_nul.py).
TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)
# Words that FTS5 treats as syntax, and SQL, in what agents store and search.
NASTY = st.sampled_from(
    ['"', "'", "*", "AND", "OR NOT", "NEAR(a b)", "col:x", "(", "^", "'; DROP TABLE memories;--"]
)
CONTENT = st.one_of(TEXT, st.builds(" ".join, st.lists(NASTY | TEXT, min_size=1, max_size=4)))
TAGS = st.lists(TEXT, max_size=3)


def too_expensive(query: str) -> bool:
    """A query past the cost bounds (tests/unit/test_fts_query.py), which a search refuses."""
    try:
        read_query(query, bounded=True)
    except InvalidArgument:
        return True
    return False


@functools.cache
def template() -> Path:
    path = Path(tempfile.mkdtemp(prefix="am-stateful-")) / "template.db"
    atexit.register(shutil.rmtree, path.parent, True)
    open_store(path).close()
    return path


class MemoryMachine(RuleBasedStateMachine):
    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.clock = Clock()
        path = Path(self.tmp.name) / "m.db"
        shutil.copyfile(template(), path)  # a new file at head, without migrating each time
        self.service = MemoryService(open_store(path), clock=self.clock)
        self.model: dict[int, dict] = {}
        self.links: set[tuple[int, int, str]] = set()

    def teardown(self) -> None:
        self.service.close()
        self.tmp.cleanup()

    @rule(target=memories, content=CONTENT, memory_type=st.sampled_from(MEMORY_TYPES), tags=TAGS)
    def store(self, content, memory_type, tags):
        args = {"content": content, "type": memory_type, "tags": tags}
        if not content.strip():
            self.rejected(self.service.store, args)
            return -1
        answer = self.service.store(args)
        memory_id = answer["id"]
        twin = self.twin(content, memory_type)
        if twin is not None:  # an exact duplicate: the stored one takes the new tags
            assert answer.get("duplicate_of") == twin == memory_id
            stored = self.model[twin]["tags"]
            stored.extend(t for t in dict.fromkeys(tags) if t not in stored)
            return memory_id
        assert memory_id not in self.model and "duplicate_of" not in answer
        self.model[memory_id] = {"content": content, "type": memory_type, "tags": tags}
        return memory_id

    def twin(self, content: str, memory_type: str) -> int | None:
        """The memory a store of ``content`` duplicates: same type, same text but for spaces."""
        text = " ".join(content.split())
        for memory_id, memory in self.model.items():
            if memory["type"] == memory_type and " ".join(memory["content"].split()) == text:
                return memory_id
        return None

    @rule(
        memory_id=memories,
        content=st.none() | CONTENT,
        tags=st.none() | TAGS,
        bogus=st.booleans(),
    )
    def update(self, memory_id, content, tags, bogus):
        args = {"id": memory_id}
        if content is not None:
            args["content"] = content
        if tags is not None:
            args["tags"] = tags
        if bogus:
            args["colour"] = "red"
        valid = (content is None or content.strip()) and len(args) > 1 and not bogus
        if not valid:
            self.rejected(self.service.update, args)
            return
        result = self.service.update(args)
        if memory_id not in self.model:
            assert result.get("reason") == "not_found"
            return
        if content is not None:
            self.model[memory_id]["content"] = content
        if tags is not None:
            self.model[memory_id]["tags"] = tags
        assert result["content"] == self.model[memory_id]["content"]

    @rule(a=memories, b=memories, kind=st.sampled_from(LINK_KINDS))
    def link(self, a, b, kind):
        args = {"from_id": a, "to_id": b, "kind": kind}
        if a == b:
            self.rejected(self.service.link, args)
            return
        self.service.link(args)
        if a in self.model and b in self.model:
            self.links.add(self.key(a, b, kind))

    @rule(a=memories, b=memories, kind=st.sampled_from(LINK_KINDS))
    def unlink(self, a, b, kind):
        self.service.unlink({"from_id": a, "to_id": b, "kind": kind})  # a == b: a no-op
        self.links.discard(self.key(a, b, kind))

    @rule(memory_id=memories)
    def forget(self, memory_id):
        self.service.forget({"id": memory_id})
        self.model.pop(memory_id, None)
        self.links = {e for e in self.links if memory_id not in e[:2]}

    @rule(query=CONTENT, limit=st.integers(-2, 210))
    def search(self, query, limit):
        args = {"query": query, "limit": limit}
        if not 1 <= limit <= 200 or too_expensive(query):
            self.rejected(self.service.search, args)
            return
        found = self.service.search(args)["results"]
        assert len(found) <= limit
        for memory in found:
            assert memory["content"] == self.model[memory["id"]]["content"]

    @rule(memory_id=memories)
    def search_finds_a_stored_word(self, memory_id):
        if memory_id not in self.model:
            return
        words = [w for w in self.model[memory_id]["content"].split() if w.isalnum()]
        if not words:
            return
        args = {"query": f'"{words[0]}"', "limit": 200, "include_superseded": True}
        found = self.service.search(args)["results"]
        matching = [m for m in self.model.values() if words[0] in m["content"].split()]
        if len(matching) <= 200:
            assert memory_id in {m["id"] for m in found}

    @rule(seconds=st.integers(0, 90 * 86_400))
    def sweep(self, seconds):
        self.clock.advance(seconds)
        assert sweep(self.service)["expired"] == 0  # nothing here has a TTL

    @invariant()
    def database_matches_the_model(self):
        listed = {m["id"]: m for m in self.service.list({"include_superseded": True})}
        assert set(listed) == set(self.model)
        for memory_id, expected in self.model.items():
            got = listed[memory_id]
            assert (got["content"], got["type"], got["tags"]) == (
                expected["content"],
                expected["type"],
                expected["tags"],
            )
        stored = {
            (edge["self"], edge["id"], edge["kind"])
            for edge in self.service.db.neighbours(list(self.model))
            if edge["direction"] == "out"
        }
        assert stored == self.links

    @staticmethod
    def key(a: int, b: int, kind: str) -> tuple[int, int, str]:
        return (min(a, b), max(a, b), kind) if kind == "relates_to" else (a, b, kind)

    def rejected(self, operation, args) -> None:
        before = (self.service.list({}), set(self.links))
        try:
            operation(args)
        except (InvalidArgument, UnknownField):
            pass
        else:
            raise AssertionError(f"{operation.__name__}({args!r}) was accepted")
        assert (self.service.list({}), set(self.links)) == before


MemoryMachine.TestCase.settings = settings(
    max_examples=examples(30),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMemoryMachine = MemoryMachine.TestCase
