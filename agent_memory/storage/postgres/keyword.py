"""PostgreSQL keyword ranking that gives FTS5's bm25, score for score.

Why not PostgreSQL's own ranking: ``ts_rank`` and ``ts_rank_cd`` are not BM25 (no IDF), and
the search contract ranks by FTS5's bm25 blended with decay; a team moving a memory file to
PostgreSQL must find the same memories first. So the SQL computes FTS5's formula itself
(fts5_aux.c: k1 = 1.2, b = 0.75, per phrase IDF = ln((N - n + 0.5) / (n + 0.5)) floored at
1e-6, avgdl = all tokens / N), with the operations in FTS5's order so that equal scores stay
equal and ties still fall to the smaller id.

What FTS5 counts in a row is not only "the phrase occurs": it reads a phrase's positions
while the phrase's iterator stands on the row, so a phrase under an AND or NOT that does not
match the row counts nothing (``_conditions``), and a NEAR group counts only the instances
that take part in a match (``_near_positions``, fts5ExprNearIsMatch's rule). Not reproduced: in
nested queries FTS5 sometimes counts a phrase whose iterator is parked on the row without
matching it (with a NEAR group holding a multi-word phrase, even positions left over from an
earlier row). That changes scores, never which rows match.

The keyword columns each row carries (lexemes, positions, counts): document.py; bm25's N,
average length and each word's row count: totals.py, and a query's phrases' row counts in
SQL: counts.py. What a row costs: the heap visit, one jsonb
lookup a word (``tf`` holds bm25's weighted frequency), and the score's arithmetic over
columns, not arrays.
"""

from __future__ import annotations

from typing import Any

from agent_memory import query, ranking
from agent_memory.contract.vocabulary import PINNED_TYPES
from agent_memory.query import And, Near, Node, Not, Or, Phrase, Term, bm25
from agent_memory.storage.postgres import tsquery
from agent_memory.storage.postgres.counts import COUNTS_BY_INDEX_MAX as COUNTS_BY_INDEX_MAX
from agent_memory.storage.postgres.counts import Sql as _Sql
from agent_memory.storage.postgres.counts import phrase_rows
from agent_memory.storage.postgres.counts import word_rows_sql as word_rows_sql
from agent_memory.storage.postgres.document import Document as Document
from agent_memory.storage.postgres.document import document as document
from agent_memory.storage.postgres.totals import COMPACT_LOCK as COMPACT_LOCK
from agent_memory.storage.postgres.totals import COMPACT_TOTALS as COMPACT_TOTALS
from agent_memory.storage.postgres.totals import TOTALS

# Where the SQL reads a tags position, it adds this: a NEAR group's distance (a 32-bit
# integer) never reaches from one column into the other.
COLUMN_SPAN = 1 << 33

# Up to this many phrases, each one's IDF and its frequency in a row are columns of their own and a
# row's score is one sum written out in FTS5's order (arrays and their subscripts, read for every
# phrase of every row, would cost more than the rest of the score). Past it (a query may hold
# query.cost.MAX_QUERY_WORDS), they are arrays and the sum runs over them: PostgreSQL allows 1,664
# columns in a select list, and an expression 10,000 deep overflows its stack.
INLINE_SUM_MAX_PHRASES = 256


# -- Ranking ----------------------------------------------------------------------------------

_F = "::float8"


_TAG_WEIGHTS = "('B', 'C')"


def _column_weights(columns: frozenset[str] | None, first: bool) -> str | None:
    """SQL true for a position's weight ``u.w`` in ``columns`` (at a column's first token
    when ``first``); None when any position will do."""
    wanted = tsquery.weights(columns, first)
    if not wanted:
        return None
    return "u.w IN (" + ", ".join(f"'{weight}'" for weight in wanted) + ")"


def _starts(phrase: Phrase, columns: frozenset[str] | None, out: _Sql) -> None:
    """SELECT the positions where ``phrase`` starts in ``m.terms``, in ``columns`` (a set,
    one column p; a tags position is read COLUMN_SPAN further on)."""
    for i, term in enumerate(phrase.terms):
        if i:
            out.add(" INTERSECT ")
        test = "starts_with(t.lexeme, %s)" if term.prefix else "t.lexeme = %s"
        where = _column_weights(columns, phrase.first and i == 0)
        out.add(
            f"SELECT u.p + CASE WHEN u.w IN {_TAG_WEIGHTS} THEN {COLUMN_SPAN} ELSE 0 END - {i}"
            " FROM unnest(m.terms) t, unnest(t.positions, t.weights) u(p, w)"
            f" WHERE {test}" + (f" AND {where}" if where else ""),
            [query.lexeme(term.token)],
        )


def _single_word(phrase: Phrase, leaf: Near) -> bool:
    return len(phrase.terms) == 1 and not phrase.first and len(leaf.phrases) == 1


def _counted(column: str, term: Term) -> str:
    """A word's value in ``m.<column>`` (a count map), summed over every word it is a prefix
    of for ``abc*``, as float8; its lexeme is the one parameter."""
    if term.prefix:
        return (
            f"(SELECT coalesce(sum(value{_F}), 0{_F}) FROM jsonb_each_text(m.{column})"
            " WHERE starts_with(key, %s))"
        )
    return f"coalesce((m.{column} ->> %s){_F}, 0{_F})"


def _word_frequency(phrase: Phrase, columns: frozenset[str] | None, out: _Sql) -> None:
    """One word's frequency in row m as FTS5's bm25 counts it in ``columns``: a hit in the
    content 1, in the tags bm25.TAG_WEIGHT. ``tf`` holds it for both columns (one lookup);
    ``tag_tf`` the tags' hits. Exact: small multiples of a sum of powers of two."""
    term = phrase.terms[0]
    word = [query.lexeme(term.token)]
    both, tags = _counted("tf", term), _counted("tag_tf", term)
    weight = f"{bm25.TAG_WEIGHT!r}{_F}"
    if columns is None or len(columns) == len(query.COLUMNS):
        out.add(both, word)
    elif "content" in columns:
        out.add(f"({both} - {tags} * {weight})", word + word)
    else:
        out.add(f"{tags} * {weight}", word)


def _near_positions(phrase: Phrase, leaf: Near, out: _Sql) -> None:
    """SELECT the starts of ``phrase`` that take part in a match of its NEAR group (a(p)).

    FTS5 (fts5ExprNearIsMatch): instances match when each starts no more than its length +
    N tokens before the last of them starts. So a start p of this phrase takes part when
    some start M in [p, p + its length + N] (p itself, or another phrase's) has, for every
    other phrase, a start in [M - that phrase's length - N, M].
    """
    others = [other for other in leaf.phrases if other is not phrase]
    reach = len(phrase.terms) + leaf.distance
    out.add("SELECT a.p FROM (")
    _starts(phrase, leaf.columns, out)
    out.add(") a(p) WHERE EXISTS (SELECT 1 FROM (SELECT a.p")
    for other in others:
        out.add(" UNION ALL (")
        _starts(other, leaf.columns, out)
        out.add(")")
    out.add(f") c(top) WHERE c.top BETWEEN a.p AND a.p + {reach}")
    for other in others:
        out.add(" AND EXISTS (SELECT 1 FROM (")
        _starts(other, leaf.columns, out)
        out.add(f") b(q) WHERE b.q BETWEEN c.top - {len(other.terms) + leaf.distance} AND c.top)")
    out.add(")")


def _frequency(phrase: Phrase, leaf: Near, out: _Sql) -> None:
    """The phrase's term frequency in row m as FTS5 counts it: its instances (one in the
    tags as bm25.TAG_WEIGHT), and in a NEAR group only those that take part in a match of
    the group."""
    out.add(
        f"(SELECT coalesce(sum(CASE WHEN a.p >= {COLUMN_SPAN} THEN {bm25.TAG_WEIGHT!r}{_F}"
        f" ELSE 1{_F} END), 0{_F}) FROM ("
    )
    if len(leaf.phrases) > 1:
        _near_positions(phrase, leaf, out)
    else:
        _starts(phrase, leaf.columns, out)
    out.add(") a(p))")


def _has_near(node: Node) -> bool:
    if isinstance(node, Near):
        return len(node.phrases) > 1
    children = (node.left, node.right) if isinstance(node, Not) else node.children
    return any(_has_near(child) for child in children)


def _loosened(node: Node) -> Node:
    """``node`` with each NEAR group as the AND of its phrases: a tsquery that the GIN index
    answers and that every row FTS5 matches passes (``_matches`` then decides)."""
    if isinstance(node, Near):
        if len(node.phrases) < 2:
            return node
        return And(tuple(Near((p,), node.distance, node.columns) for p in node.phrases))
    if isinstance(node, Not):
        # Excluding fewer rows loosens too: an exclusion with a NEAR group in it is left out.
        left = _loosened(node.left)
        return left if _has_near(node.right) else Not(left, node.right)
    return type(node)(tuple(_loosened(child) for child in node.children))


def _matches(node: Node, out: _Sql) -> None:
    """SQL true when row m matches ``node`` as FTS5 matches it (NEAR groups included)."""
    if not _has_near(node):
        rendered, params = tsquery.to_tsquery(node)
        out.add(f"m.terms @@ {rendered}", params)
    elif isinstance(node, Near):
        if node.columns is not None and not node.columns:
            out.add("FALSE")
            return
        out.add("EXISTS (")
        _near_positions(node.phrases[0], node, out)
        out.add(")")
    elif isinstance(node, Not):
        out.add("(")
        _matches(node.left, out)
        out.add(" AND NOT ")
        _matches(node.right, out)
        out.add(")")
    else:
        out.add("(")
        for i, child in enumerate(node.children):
            out.add((" AND " if isinstance(node, And) else " OR ") if i else "")
            _matches(child, out)
        out.add(")")


def _candidates(node: Node, out: _Sql) -> None:
    """SQL true for the rows the GIN index finds for ``node`` (a tree without NEAR groups).
    An OR is asked as one tsquery per alternative (``@@ ANY``, a bitmap scan each): GIN
    prepares a tsquery of N alternatives in O(N²), and
    N tsqueries of one alternative in O(N)."""
    if not isinstance(node, Or):
        rendered, params = tsquery.to_tsquery(node)
        out.add(f"terms @@ {rendered}", params)
        return
    texts = [text for text in map(tsquery.tsquery_text, node.children) if text is not None]
    out.add("terms @@ ANY(%s::tsquery[])" if texts else "FALSE", [texts] if texts else [])


def _conditions(found: list[tuple[Phrase, Near, tuple[Node, ...]]]) -> dict[int, tuple[int, Node]]:
    """The nodes whose match in a row decides whether FTS5 counts a phrase's instances
    there: every node above the phrase's leaf but the root (which matched). FTS5 reads a
    phrase's positions only while the phrase's iterator stands on the row, and an AND or
    NOT that does not match the row has moved its children past it. Keyed by id(node),
    each with its 1-based position in the row's ``above`` array: a node is matched once
    a row, whatever the number of phrases under it."""
    above: dict[int, tuple[int, Node]] = {}
    for _, _, nodes in found:
        for node in nodes[:-1]:
            if id(node) not in above:
                above[id(node)] = (len(above) + 1, node)
    return above


def _phrases(node: Node) -> list[tuple[Phrase, Near, tuple[Node, ...]]]:
    """FTS5's phrases that can count in a row (see query.phrase_paths): not those of an
    empty column filter, nor one with a lexeme too long to store."""
    return [
        (phrase, leaf, above)
        for phrase, leaf, above in query.phrase_paths(node)
        if (leaf.columns is None or leaf.columns) and tsquery.storable(phrase)
    ]


def decay_sql(alias: str) -> str:
    """ranking.decay of row ``alias`` at the one ``%s`` parameter (now), in SQL."""
    pinned = ", ".join(f"'{t}'" for t in sorted(PINNED_TYPES))
    return (
        f"exp(greatest(%s - {alias}.last_accessed, 0){_F} * CASE WHEN {alias}.type IN ({pinned})"
        f" THEN {ranking.decay_rate(sorted(PINNED_TYPES)[0])!r}{_F}"
        f" ELSE {ranking.decay_rate('TODO')!r}{_F} END)"
    )


def _filtered(
    sql: _Sql,
    memory_type: str | None,
    tag: str | None,
    scope: str | None,
    by: str | None,
    until: int | None,
) -> None:
    """The filters, each exact, applied before the keyword leg's cut."""
    if memory_type is not None:
        sql.add(" AND type = %s", [memory_type])
    if scope is not None:
        sql.add(" AND scope = %s", [scope])
    if tag is not None:
        sql.add(" AND tags @> jsonb_build_array(%s::text)", [tag])
    if by is not None:
        sql.add(" AND %s IN (created_by, updated_by)", [by])
    if until is not None:
        sql.add(" AND created_at <= %s", [until])


def keyword_ranking_sql(
    node: Node,
    *,
    limit: int,
    memory_type: str | None = None,
    tag: str | None = None,
    scope: str | None = None,
    now: int | None = None,
    scored: Node | None = None,
    by: str | None = None,
    until: int | None = None,
) -> tuple[str, list[Any]]:
    """(SQL, parameters) listing (id, score) best first, ties by id, at most ``limit`` rows.

    ``score`` is -bm25 as FTS5 computes it for the query ``node`` over the whole table (N,
    avgdl and each phrase's IDF count every row), plus the row's decay as of ``now`` when
    ``now`` is given (the keyword page's ``decay - bm25``); the filters (type, scope, a tag
    that is one of the row's tags, exactly) apply before the cut. With ``scored`` (a node
    without NEAR groups), only the rows matching it are ranked, each with its whole score:
    how a question's common words are left out (query.bm25).
    """
    found = _phrases(node)
    # N and the tokens of all rows from the totals log (no pass over the table); each
    # phrase's row count (_phrase_rows), and its IDF.
    sql = _Sql().add(
        f"WITH stats AS MATERIALIZED (SELECT n, tokens FROM {TOTALS} totals),"
        " hits AS MATERIALIZED ("
    )
    phrase_rows([(phrase, leaf.columns) for phrase, leaf, _ in found], sql)
    _idfs(len(found), sql)
    # The nodes above a phrase's leaf that decide whether it counts (_conditions), each one's
    # match computed once a row, in ``m.above``.
    above = _conditions(found)
    sql.add(", matched AS (SELECT id, doc_len, terms, tf, tag_tf, type, last_accessed")
    if above:
        sql.add(", ARRAY[")
        for i, (_, condition) in enumerate(above.values()):
            sql.add(", " if i else "")
            _matches(condition, sql)
        sql.add("] AS above")
    sql.add(" FROM memories m WHERE ")
    _candidates(_loosened(node) if scored is None else scored, sql)
    if scored is None and _has_near(node):
        sql.add(" AND ")
        _matches(node, sql)
    _filtered(sql, memory_type, tag, scope, by, until)
    _frequencies(found, above, sql)
    _score(len(found), now, sql)
    sql.add(" AS score FROM freqs f, idfs ORDER BY score DESC, f.id LIMIT %s", [limit])
    return sql.text(), sql.params


def _columns(phrases: int) -> bool:
    """Whether each phrase's IDF and frequency are columns of their own (else arrays)."""
    return phrases <= INLINE_SUM_MAX_PHRASES


def _idfs(phrases: int, sql: _Sql) -> None:
    """The idfs CTE: each phrase's IDF from N and its row count (hits.h), as columns i1, i2,
    ... (or one array, idf, past INLINE_SUM_MAX_PHRASES)."""
    # FTS5: idf = log((N - n + 0.5) / (n + 0.5)), and 1e-6 where that is not positive.
    ratio = "ln(((stats.n - {h}){f} + 0.5{f}) / ({h}{f} + 0.5{f}))"
    floored = "CASE WHEN {x} <= 0{f} THEN " + f"{bm25.IDF_FLOOR!r}{_F}" + " ELSE {x} END"
    if _columns(phrases):
        idfs = [
            floored.format(x=ratio.format(h=f"hits.h[{i}]", f=_F), f=_F) + f" AS i{i}"
            for i in range(1, phrases + 1)
        ]
        sql.add("), idfs AS MATERIALIZED (SELECT " + (", ".join(idfs) or "0 AS none"))
        sql.add(" FROM stats, hits)")
        return
    sql.add(
        "), idfs AS MATERIALIZED (SELECT coalesce(array_agg("
        + floored.format(x="r.x", f=_F)
        + " ORDER BY r.i), '{}') AS idf FROM stats, hits, LATERAL (SELECT "
        + ratio.format(h="u.h", f=_F)
        + " AS x, u.i FROM unnest(hits.h) WITH ORDINALITY u(h, i)) r)"
    )


def _frequencies(
    found: list[tuple[Phrase, Near, tuple[Node, ...]]],
    above: dict[int, tuple[int, Node]],
    sql: _Sql,
) -> None:
    """The freqs CTE: each matched row's bm25 length term (norm) and each phrase's frequency
    in it, counted only where FTS5 counts it (``above``: _conditions), as columns f1, f2, ...
    (or one array, f). A phrase's positions are only read from rows that contain it (one
    tsvector lookup first)."""
    # FTS5: k1 * (1 - b + b * D / avgdl), the same for every phrase of a row.
    k1, b = f"{bm25.BM25_K1!r}{_F}", f"{bm25.BM25_B!r}{_F}"
    norm = f"{k1} * (1{_F} - {b} + {b} * m.doc_len{_F} / (stats.tokens{_F} / stats.n{_F}))"
    columns = _columns(len(found))
    sql.add(f"), freqs AS MATERIALIZED (SELECT m.id, m.type, m.last_accessed, {norm} AS norm")
    sql.add("" if columns else ", ARRAY[")
    for i, (phrase, leaf, nodes) in enumerate(found):
        sql.add(", " if i or columns else "")
        when = " AND ".join(f"m.above[{above[id(n)][0]}]" for n in nodes[:-1])
        if _single_word(phrase, leaf):
            if when:
                sql.add(f"CASE WHEN {when} THEN ")
            _word_frequency(phrase, leaf.columns, sql)
        else:
            rendered, params = tsquery.phrase_tsquery(phrase, leaf.columns)
            first = f"{when} AND " if when else ""
            sql.add(f"CASE WHEN {first}m.terms @@ {rendered} THEN ", params)
            _frequency(phrase, leaf, sql)
        if when or not _single_word(phrase, leaf):
            sql.add(f" ELSE 0{_F} END")
        sql.add(f" AS f{i + 1}" if columns else "")
    sql.add(" FROM matched m, stats" if columns else "]::float8[] AS f FROM matched m, stats")


def _score(phrases: int, now: int | None, sql: _Sql) -> None:
    """SELECT f.id and its score from freqs: -bm25 over the ``phrases`` phrases (plus decay
    as of ``now`` when given)."""
    # FTS5: score += idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl)), phrase by
    # phrase, in its order of operations; -bm25 is that score.
    k1 = f"{bm25.BM25_K1!r}{_F}"
    sql.add(") SELECT f.id, ")
    if now is not None:
        sql.add(decay_sql("f") + " + ", [now])
    if not phrases:
        sql.add(f"0{_F}")
    elif _columns(phrases):
        terms = [
            f"idfs.i{i} * ((f.f{i} * ({k1} + 1.0{_F})) / (f.f{i} + f.norm))"
            for i in range(1, phrases + 1)
        ]
        sql.add("(" + " + ".join(terms) + ")")
    else:
        sql.add(
            f"(SELECT sum(u.idf * ((u.f * ({k1} + 1.0{_F})) / (u.f + f.norm)) ORDER BY u.i)"
            " FROM unnest(idfs.idf, f.f) WITH ORDINALITY u(idf, f, i))"
        )
