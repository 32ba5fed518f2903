"""PostgreSQL: how many rows hold each lexeme, without a pass over the table.

bm25 needs each query word's row count. Counting it from the GIN index visits the heap page
of every row that holds the word, most of a two-word search's time on a large table, and a
question's common words cost a visit to most of the table. So the keyword totals log now
carries, per statement, the change in each lexeme's row count (``lexemes``), and
``lexeme_rows`` holds the counts folded out of the log. A count is that row plus the log's
changes, exact in any snapshot as the totals are (storage/postgres/keyword.py), and the
totals folded out of the log move to ``keyword_folded``, so that a folded log is empty.
One log row per statement, as before. A statement of one row (a store, a forget) logs that
row's own tf map, whose keys are its lexemes: the row's sign (``rows``, 1 or -1) is then
each key's change.
Aggregating the keys instead would cost a store several times what copying the map costs.
A statement of several rows (an import batch, a sweep batch) and an update
(``rows`` 0) log each lexeme's change as the value.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# One row's tf map as it is, else each lexeme of the statement's rows with the number of
# those rows that hold it (a tf map's keys are the row's lexemes); NULL when there are none.
_COUNTS = (
    "CASE WHEN count(*) = 1 THEN (array_agg({rows}.tf))[1] ELSE"
    " (SELECT jsonb_object_agg(k, {sign}n) FROM"
    " (SELECT k, count(*) AS n FROM {rows}, jsonb_object_keys({rows}.tf) k GROUP BY k) c) END"
)
STATEMENTS = (
    "ALTER TABLE keyword_totals ADD COLUMN lexemes jsonb",
    "CREATE TABLE lexeme_rows (lexeme text PRIMARY KEY, rows bigint NOT NULL)",
    # What folds take out of the log, so that a folded log is empty (and a vacuum leaves
    # it no pages to read): N and the tokens of all rows.
    "CREATE TABLE keyword_folded (rows bigint NOT NULL, tokens bigint NOT NULL)",
    "INSERT INTO keyword_folded"
    " SELECT coalesce(sum(rows), 0), coalesce(sum(tokens), 0) FROM keyword_totals",
    "DELETE FROM keyword_totals",
    f"""
    CREATE OR REPLACE FUNCTION keyword_totals_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO keyword_totals SELECT count(*), coalesce(sum(doc_len), 0),
        {_COUNTS.format(rows="added", sign="")}
      FROM added HAVING count(*) > 0;
      RETURN NULL;
    END $$
    """,
    f"""
    CREATE OR REPLACE FUNCTION keyword_totals_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO keyword_totals SELECT -count(*), -coalesce(sum(doc_len), 0),
        {_COUNTS.format(rows="removed", sign="-")}
      FROM removed HAVING count(*) > 0;
      RETURN NULL;
    END $$
    """,
    # An update changes the counts only where it changed a row's lexemes (a recency bump
    # or the decay refresh changes none: their rows are compared, nothing is appended).
    """
    CREATE OR REPLACE FUNCTION keyword_totals_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE change bigint; moved jsonb;
    BEGIN
      SELECT (SELECT coalesce(sum(doc_len), 0) FROM added)
           - (SELECT coalesce(sum(doc_len), 0) FROM removed) INTO change;
      SELECT jsonb_object_agg(k, s) INTO moved FROM (
        SELECT k, sum(s) AS s FROM (
          SELECT a.tf AS new, r.tf AS old FROM added a JOIN removed r USING (id)
          WHERE a.tf <> r.tf
        ) c, LATERAL (SELECT k, 1 AS s FROM jsonb_object_keys(c.new) k
                      UNION ALL SELECT k, -1 FROM jsonb_object_keys(c.old) k) d
        GROUP BY k HAVING sum(s) <> 0
      ) e;
      IF change <> 0 OR moved IS NOT NULL THEN
        INSERT INTO keyword_totals VALUES (0, change, moved);
      END IF;
      RETURN NULL;
    END $$
    """,
    "INSERT INTO lexeme_rows SELECT k, count(*) FROM memories, jsonb_object_keys(tf) k GROUP BY k",
)


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrates forward only")
