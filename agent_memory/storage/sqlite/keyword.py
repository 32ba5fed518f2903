"""Keyword search in a SQLite store: FTS5's bm25, the plain-language retry, and every
shortcut that makes a question cheap on a large file, in one place and one read snapshot.

A keyword page ranks by ``score = decay - bm25`` (bm25 is negative in FTS5: lower is
better), ties by id; the keyword leg of a hybrid search ranks by bm25 alone. The query runs
as FTS5 syntax, unless it is plain words; plain words, and a query FTS5 cannot parse,
are searched as words (query.ParsedQuery, query.bm25): the rows holding every word first
(FTS5's AND), then the rows holding an informative word, scored by the OR of all the words.
That is where questions land ("what vector store do we use?"), and where the shortcuts
apply, each of them exact unless said otherwise:

1. Candidates: an unfiltered page ranks the best KEYWORD_CANDIDATES rows by bm25 in the
   index alone, then blends decay into those only. Decay lies in (0, MAX_DECAY], so a row
   past the candidates scores at most the last candidate's -bm25 + MAX_DECAY: when the
   page's last score beats that, the page is the full query's.
2. Pruning (planned by agent_memory.query.bm25, as on PostgreSQL): past PRUNE_MIN_ROWS,
   the informative words alone are scored when they decide the page: the other words'
   bm25 share is added back to the best rows (term_scores, FTS5's own arithmetic) and the
   page is taken only when no row past it could catch up (see _decided).
3. Restriction (past PRUNE_EXACT_ROWS memories, not exact): when the kept words match many
   rows, only rows matching the rarest of them are scored (see bm25.rarest).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import sqlalchemy
import sqlean

from agent_memory.contract.models import Filters, WordCounts
from agent_memory.query import ParsedQuery, any_word, bm25, to_fts5, unsegmented, word_leaf
from agent_memory.ranking import MAX_DECAY
from agent_memory.storage.sqlite import keyword_sql, rows
from agent_memory.storage.sqlite.keyword_sql import CANDIDATES, SCORE, WORST

log = logging.getLogger(__name__)

# An unfiltered keyword search ranks the best KEYWORD_CANDIDATES rows by bm25 in the index
# alone (no join to memories for every match), then blends decay into those only.
KEYWORD_CANDIDATES = 1_000
# When rows past a pruned page nearly tie with its last ones, this many more rows are
# scored with the left-out words added back.
PRUNE_RESCORE_ROWS = 200
# Document frequencies of query words are reused for this long, and while the number of
# indexed rows moves by less than this fraction: counting a word visits every row holding
# it, and common words repeat.
FREQUENCY_CACHE_SECS = 60
FREQUENCY_CACHE_DRIFT = 0.01
FREQUENCY_CACHE_WORDS = 4_096
# SQLite's generic SQLITE_ERROR: what a MATCH expression FTS5 cannot parse raises (busy,
# I/O, full and corrupt databases have codes of their own).
_SQLITE_ERROR = 1

# FTS5's "averages" record (rowid 1 of its data table) starts with the number of rows
# indexed, the N of bm25's IDF, then their total length in tokens, column by column (bm25's
# avgdl counts every column); a phrase's row count is its n.
_AVERAGES = "SELECT block FROM memories_fts_data WHERE id = 1"
_PHRASE_ROWS = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?"
# Per row among a JSON array of ids: how often the phrase occurs in the content and in the
# tags (highlight() inserts one character before each occurrence). FTS5 walks the phrase's
# rows once and highlights only the ids; bm25() would have counted the
# phrase's rows all over again for every id. Lengths are counted in bytes: length() of text
# stops at a NUL, which FTS5 indexes past. _DOC_SIZES gives those rows' lengths
# in tokens, column by column (bm25's D is their sum).
_OCCURRENCES = (
    "SELECT rowid, length(CAST(highlight(memories_fts, 0, 'x', '') AS BLOB))"
    " - length(CAST(content AS BLOB)),"
    " length(CAST(highlight(memories_fts, 1, 'x', '') AS BLOB))"
    " - length(CAST(tags AS BLOB)) "
    "FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))"
)
_DOC_SIZES = "SELECT id, sz FROM memories_fts_docsize WHERE id IN (SELECT value FROM json_each(?))"
# The index's columns (FTS5 keeps a number per column in its records).
_COLUMNS = 2


class FtsQueryError(Exception):
    """FTS5 could not parse the MATCH expression"""

    def __init__(self, error: sqlean.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error


def _varints(blob: bytes, count: int) -> list[int]:
    """The first ``count`` of the variable-length integers SQLite wrote one after another."""
    values, at = [], 0
    while len(values) < count:
        value = 0
        for i in range(9):
            byte = blob[at] if at < len(blob) else 0
            at += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


def _ident(item: Any) -> int:
    """A ranked item's id: a memory (a page) or an id (a leg)."""
    return item if isinstance(item, int) else item["id"]


def driver(conn: sqlalchemy.Connection) -> Any:
    """The driver's connection under ``conn``, in its transaction: the search's statements
    run there, without SQLAlchemy's execution costs (see keyword_sql)."""
    return conn.connection.driver_connection


class Run:
    """One search's statements on its snapshot: with ``page``, memories by decay - bm25
    (decay_score as of ``now``), else ids by bm25 alone; filters before the cut."""

    def __init__(
        self, conn: sqlalchemy.Connection, *, now: int, filters: Filters, page: bool
    ) -> None:
        self.conn = conn
        self.sql = driver(conn)
        self.page = page
        self.key = rows.filter_key(filters)
        self.params = (
            {**rows.filter_params(filters), "now": now} if page else rows.filter_params(filters)
        )
        self._averages: list[int] | None = None

    def __call__(self, match: str, n: int, within: str | None) -> list[tuple[Any, float]]:
        """(item, score) best first, at most ``n``; FtsQueryError when FTS5 cannot parse.

        Both expressions are as the index holds text (``match_text``, ``any_of``). Nothing
        probes them first: a query the parser read as FTS5 syntax almost always parses, and
        the quoted words of a query searched as words always do; the one refusal in a
        thousand pays for SQLAlchemy's exception wrapping instead of every search paying a
        probe."""
        params = {**self.params, "match": match, "limit": n}
        if within is not None:
            params["within"] = within
        try:
            return self._ranked(params, within is not None)
        except (sqlalchemy.exc.OperationalError, sqlean.OperationalError) as exc:
            error = getattr(exc, "orig", None) or exc
            if getattr(error, "sqlite_errorcode", None) == _SQLITE_ERROR:
                raise FtsQueryError(error) from exc
            raise

    def _ranked(self, params: dict[str, Any], within: bool) -> list[tuple[Any, float]]:
        if not self.page:
            sql, fixed = keyword_sql.leg_sql(self.key, within)
            found = self.sql.execute(sql, {**params, **fixed})
            return [(memory_id, -bm25) for memory_id, bm25 in found]
        found = None if any(self.key) else self._candidates_page(params)
        if found is None:
            sql, fixed = keyword_sql.page_sql(self.key, within)
            found = self.sql.execute(sql, {**params, **fixed}).fetchall()
        return [(keyword_sql.memory(row), row[SCORE]) for row in found]

    def averages(self) -> list[int]:
        """FTS5's averages record, read once per search: the rows indexed, then the tokens
        of each column (see term_scores)."""
        if self._averages is None:
            self._averages = averages(self.conn)
        return self._averages

    def _candidates_page(self, params: dict[str, Any]) -> list[Any] | None:
        """An unfiltered page from the bm25 candidates, or None when they cannot tell."""
        cut = max(KEYWORD_CANDIDATES, params["limit"])
        if self.averages()[0] <= cut:  # every row a candidate: the plain query is cheaper
            return None
        sql, fixed = keyword_sql.candidates_sql("within" in params)
        found = self.sql.execute(sql, {**params, **fixed, "cut": cut}).fetchall()
        if not found or found[0][CANDIDATES] < cut:
            return found
        if len(found) == params["limit"] and found[-1][SCORE] > MAX_DECAY - found[0][WORST]:
            return found
        return None


def averages(conn: sqlalchemy.Connection) -> list[int]:
    """FTS5's averages record: the rows indexed (what bm25 counts as N), then the tokens of
    each column (bm25's avgdl); zeros for an empty index."""
    found = driver(conn).execute(_AVERAGES).fetchone()
    return _varints((found and found[0]) or b"", 1 + _COLUMNS)


def indexed_rows(conn: sqlalchemy.Connection) -> int:
    """The row count FTS5 keeps in its averages record (what bm25 counts as N)."""
    return averages(conn)[0]


def match_text(parsed: ParsedQuery) -> str:
    """The MATCH expression of a query searched as FTS5 syntax: its text, unless it holds a
    run of a script written without spaces, rewritten as the index holds it (query.bigrams)."""
    if parsed.syntax is None or not unsegmented(parsed.text):
        return parsed.text
    return to_fts5(parsed.syntax)


def any_of(words: Sequence[str], parsed: ParsedQuery | None = None) -> str:
    """``"a" OR "b"``: the rows holding one of the words (repeats count in bm25). A word of a
    script written without spaces is its leaf (of ``parsed``, made once) as the index holds
    it."""
    if not any(unsegmented(word) for word in words):
        return " OR ".join(f'"{word}"' for word in words)
    leaf = word_leaf if parsed is None else parsed.leaf
    return to_fts5(any_word([leaf(word) for word in words]))


def all_of(parsed: ParsedQuery) -> str:
    """``"a" "b"``: the rows holding every word of the query (FTS5's implicit AND)."""
    if not any(unsegmented(word) for word in parsed.words):
        return " ".join(f'"{word}"' for word in parsed.words)
    return to_fts5(parsed.every_word())


class KeywordIndex:
    """The FTS5 index as a search sees it; keeps the word counts the shortcuts reuse."""

    def __init__(self) -> None:
        self._frequencies: dict[str, tuple[int, int, int]] = {}  # word -> (n, N, when)

    def page(
        self,
        conn: sqlalchemy.Connection,
        query: ParsedQuery,
        *,
        now: int,
        limit: int,
        filters: Filters,
    ) -> tuple[list[tuple[dict[str, Any], float]], WordCounts | None]:
        """The keyword mode's page: (memory, decay - bm25) best first, decay_score as of
        ``now``; and, for a plain query with a match, what the index says of its words."""
        run = Run(conn, now=now, filters=filters, page=True)
        found = self._match(run, query, limit, now)
        return found, self._counts(run, query, now) if found else None

    def leg(
        self,
        conn: sqlalchemy.Connection,
        query: ParsedQuery,
        *,
        now: int,
        limit: int,
        filters: Filters,
    ) -> tuple[list[tuple[int, float]], WordCounts | None]:
        """The keyword leg of a hybrid search: (id, -bm25) best first, filters applied before
        the cut; and, for a plain query, what the index says of its words."""
        run = Run(conn, now=now, filters=filters, page=False)
        return self._match(run, query, limit, now), self._counts(run, query, now)

    def _counts(self, run: Run, parsed: ParsedQuery, now: int) -> WordCounts | None:
        """What the index says about a plain query's words (ranking.relevance): the rows and
        tokens indexed (read once per search), how many rows hold each word (cached)."""
        if not parsed.as_words:
            return None
        indexed, *tokens = run.averages()
        _, hits = self.word_rows(run.conn, parsed.words, now, parsed, indexed)
        return WordCounts(indexed, sum(tokens), hits)

    def _match(self, run: Run, parsed: ParsedQuery, limit: int, now: int) -> list[Any]:
        """FTS5 syntax as FTS5 reads it, else the query's words; nothing when no row can
        match."""
        if parsed.matches_nothing:
            return []
        if not parsed.by_words:
            try:
                return run(match_text(parsed), limit, None)
            except FtsQueryError as exc:  # the parser and FTS5 disagree: search the words
                log.warning("FTS5 refuses %r (%s); searching for its words", parsed.text, exc)
        if not parsed.words:
            return []
        try:
            return self._words(run, parsed, limit, now)
        except FtsQueryError as exc:
            raise exc.error from None  # quoted words always parse: the database is at fault

    def _words(self, run: Run, parsed: ParsedQuery, limit: int, now: int) -> list[Any]:
        """The rows holding every word first (FTS5's AND), then the rows holding one of the
        informative words (bm25.plan), each scored by the OR of all the words."""
        words = parsed.words
        if len(set(words)) < 2:
            return run(any_of(words, parsed), limit, None)
        first = run(all_of(parsed), limit, None)
        if len(first) >= limit:
            return first
        total, hits = self.word_rows(run.conn, words, now, parsed, run.averages()[0])
        planned = bm25.plan(words, total, hits, never_empty=run.page)
        if not planned.kept:
            return first
        wanted = limit + len(first)  # the first rows come again: they hold the kept words
        found = self._pruned(run, planned, wanted, parsed) if planned.shortcut else None
        if found is None:
            within = any_of(planned.kept, parsed) if planned.left_out else None
            found = run(any_of(words, parsed), wanted, within)
        seen = {_ident(item) for item, _ in first}
        return first + [pair for pair in found if _ident(pair[0]) not in seen][: limit - len(first)]

    def _pruned(
        self, run: Run, planned: bm25.Plan, limit: int, parsed: ParsedQuery
    ) -> list[Any] | None:
        """The rows of the informative words, scored by them alone with the left-out words
        added back (see _decided), when that decides the page; else None.

        When the words kept match many rows, first only the rows that match their rarest
        words are scored (bm25.rarest), then, if those cannot decide the page, every row the
        kept words match.
        """
        match = any_of(planned.kept, parsed)
        if planned.rarest is not None:
            page = self._decided(run, match, any_of(planned.rarest, parsed), limit, planned)
            if page is not None:
                return page
        if not planned.left_out:
            return None  # without a restriction, this would be the full query
        return self._decided(run, match, None, limit, planned)

    def _decided(
        self, run: Run, match: str, within: str | None, limit: int, planned: bm25.Plan
    ) -> list[Any] | None:
        """The page of ``match`` with the left-out words added back, or None.

        The left-out words add at most ``planned.bound`` (BM25_TERM_MAX x their IDFs) to a
        row's score, so a row past the best ``n`` scores at most the next one's score plus
        that (rows holding only left-out words are not matched). The best ``n`` rows get the
        left-out words added back (term_scores); when the ``limit``-th of them still beats
        every row past them, it is the page, in the full query's order. First with
        n = limit; when rows past the page nearly tie with it, once more with
        PRUNE_RESCORE_ROWS more rows. With ``within``, fewer than ``limit`` rows is None:
        the other kept words' rows are needed to fill the page.
        """
        weights, bound = planned.left_out, planned.bound
        if not weights:
            found = run(match, limit, within)
            return found if len(found) >= limit else None
        for n in (limit, limit + PRUNE_RESCORE_ROWS):
            found = run(match, n + 1, within)
            if within is not None and len(found) < limit:
                return None
            ids = [_ident(item) for item, _ in found[:n]]
            added = term_scores(run.conn, ids, weights, run.averages())
            exact = sorted(
                ((item, score + added[_ident(item)]) for item, score in found[:n]),
                key=lambda pair: (-pair[1], _ident(pair[0])),
            )
            if len(found) <= n or exact[limit - 1][1] > found[n][1] + bound:
                return exact[:limit]  # every match seen, or none past them can catch up
        return None

    def word_rows(
        self,
        conn: sqlalchemy.Connection,
        words: Sequence[str],
        now: int,
        parsed: ParsedQuery | None = None,
        total: int | None = None,
    ) -> tuple[int, dict[str, int]]:
        """(rows indexed, how many rows match each word as the phrase ``"word"``; words of
        ``parsed``, when they may hold a script written without spaces).

        Counts are cached (FREQUENCY_CACHE_SECS). ``total``: the rows indexed, when the
        search has read them already.
        """
        total = indexed_rows(conn) if total is None else total
        hits: dict[str, int] = {}
        for word in set(words):
            cached = self._frequencies.get(word)
            if (
                cached is None
                or now - cached[2] > FREQUENCY_CACHE_SECS
                or abs(total - cached[1]) > FREQUENCY_CACHE_DRIFT * cached[1]
            ):
                phrase = any_of([word], parsed)
                found = driver(conn).execute(_PHRASE_ROWS, (phrase,)).fetchone()[0]
                if len(self._frequencies) >= FREQUENCY_CACHE_WORDS:
                    self._frequencies.clear()
                cached = self._frequencies[word] = (found, total, now)
            hits[word] = cached[0]
        return total, hits


def term_scores(
    conn: sqlalchemy.Connection,
    ids: Sequence[int],
    weights: dict[str, float],
    counted: Sequence[int] | None = None,
) -> dict[int, float]:
    """What the words would add to each row's -bm25, were they in the query.

    bm25 is a sum over the query's phrases of ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b +
    b * D / avgdl))``, where tf counts a hit in the tags as bm25.TAG_WEIGHT; ``weights``
    gives each word's idf (times its repeats in the query), the rest is read here as FTS5
    reads it (``counted``: the averages record, when the search has read it already).
    """
    added = dict.fromkeys(ids, 0.0)
    if not ids or not weights:
        return added
    key = json.dumps(list(ids))
    total, *tokens = averages(conn) if counted is None else counted
    sql = driver(conn)
    avgdl = sum(tokens) / total  # bm25's own arithmetic, in its order, from here on
    norm = {
        memory_id: bm25.BM25_K1
        * (1 - bm25.BM25_B + bm25.BM25_B * sum(_varints(size, _COLUMNS)) / avgdl)
        for memory_id, size in sql.execute(_DOC_SIZES, (key,))
    }
    for word, weight in weights.items():
        for memory_id, in_content, in_tags in sql.execute(_OCCURRENCES, (f'"{word}"', key)):
            tf = in_content + in_tags * bm25.TAG_WEIGHT
            added[memory_id] += weight * ((tf * (bm25.BM25_K1 + 1.0)) / (tf + norm[memory_id]))
    return added
