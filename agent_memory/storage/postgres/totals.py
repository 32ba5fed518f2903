"""bm25's N, average length and each word's row count on PostgreSQL, without a pass over
the table.

Every statement that adds, removes or re-tokenizes rows appends its change (rows, tokens,
each lexeme's rows) to keyword_totals, and a search sums the log. Appending never waits on
another writer (a single counter row would serialize every store). Exact under MVCC: a
snapshot sees the log rows of exactly the transactions it sees (the table and its triggers:
migrations/postgres). A fold (COMPACT_TOTALS) moves the log into keyword_folded and
lexeme_rows; doctor (checks.py) compares the kept counts with the rows.
"""

from __future__ import annotations

# A log row's change in the rows holding a lexeme (``value``: its value in the row's
# lexemes map): a one-row statement logs that row's tf map, whose keys each change by the
# row's sign; any other logs each lexeme's change (migrations/postgres/0007); rows logged
# before 0007 have no map, their rows being in the counts 0007 made.
_LOGGED = (
    "CASE WHEN {value} IS NULL THEN 0 WHEN abs(t.rows) = 1 THEN t.rows ELSE ({value})::bigint END"
)
# The rows holding the lexeme ``w.x``: lexeme_rows plus the log's changes.
LEXEME_ROWS = (
    "(coalesce((SELECT rows FROM lexeme_rows WHERE lexeme = w.x), 0)"
    " + coalesce((SELECT sum("
    + _LOGGED.format(value="t.lexemes ->> w.x")
    + ") FROM keyword_totals t), 0))::bigint"
)
# Each lexeme's change in rows that the log holds, a row per (log row, lexeme): with
# lexeme_rows, the rows holding each lexeme (what doctor checks against the rows' tf maps).
LOGGED_LEXEME_ROWS = (
    "SELECT e.key AS lexeme, "
    + _LOGGED.format(value="e.value")
    + " AS rows FROM keyword_totals t, jsonb_each_text(t.lexemes) e"
)
# Folds the log, in one statement: the totals into keyword_folded, the lexemes' changes into
# lexeme_rows, leaving the log empty. Rows appended meanwhile by other transactions are not
# in this statement's snapshot and stay as they are. One fold at a time (COMPACT_LOCK,
# tried, not waited for).
COMPACT_TOTALS = (
    "WITH gone AS (DELETE FROM keyword_totals RETURNING rows, tokens, lexemes),"
    " folded AS (INSERT INTO lexeme_rows AS l SELECT e.key, sum("
    + _LOGGED.format(value="e.value")
    + ") FROM gone t, jsonb_each_text(t.lexemes) e GROUP BY e.key"
    " ON CONFLICT (lexeme) DO UPDATE SET rows = l.rows + excluded.rows)"
    " UPDATE keyword_folded f SET rows = f.rows + g.rows, tokens = f.tokens + g.tokens FROM"
    " (SELECT coalesce(sum(rows), 0) AS rows, coalesce(sum(tokens), 0) AS tokens FROM gone) g"
)
# bm25's N and all rows' tokens: the folded totals and the log's changes since.
TOTALS = (
    "(SELECT coalesce(sum(rows), 0)::bigint AS n, coalesce(sum(tokens), 0)::bigint AS tokens"
    " FROM (SELECT rows, tokens FROM keyword_folded"
    " UNION ALL SELECT rows, tokens FROM keyword_totals) t)"
)
COMPACT_LOCK = 0x616D_6B77  # "amkw": pg_try_advisory_xact_lock's key
