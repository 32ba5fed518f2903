"""For the PostgreSQL tests in process and spawned: libpq service files naming the test databases,
and the queries that check the keyword totals against the rows."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from agent_memory.storage.postgres import keyword, totals


def service_file(tmp_path, **services: str) -> str:
    """A libpq service file (PGSERVICEFILE) with a service of each name leading to the
    database of its URL."""
    lines = []
    for name, url in services.items():
        parts = urlsplit(url)
        params = dict(parse_qsl(parts.query))
        fields = {
            "host": parts.hostname or params.get("host"),
            "port": parts.port or params.get("port"),
            "user": parts.username or params.get("user"),
            "password": parts.password or params.get("password"),
            "dbname": parts.path.lstrip("/"),
        }
        lines += [f"[{name}]", *(f"{k}={v}" for k, v in fields.items() if v)]
    path = tmp_path / "pg_service.conf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


TEAM_A, TEAM_B = "postgresql:///?service=teama", "postgresql:///?service=teamb"


TOTALS_AGREE = (
    f"SELECT (SELECT n FROM {keyword.TOTALS} t) = (SELECT count(*) FROM memories)"
    f" AND (SELECT tokens FROM {keyword.TOTALS} t)"
    " = (SELECT coalesce(sum(doc_len), 0) FROM memories)"
)
# Each lexeme's rows as the folded counts and the log say, against the rows themselves.
LEXEMES_AGREE = f"""
WITH truth AS (SELECT k, count(*) AS n FROM memories, jsonb_object_keys(tf) k GROUP BY k),
logged AS (SELECT lexeme AS k, rows AS n FROM lexeme_rows
           UNION ALL {totals.LOGGED_LEXEME_ROWS}),
counted AS (SELECT k, sum(n) AS n FROM logged GROUP BY k HAVING sum(n) <> 0)
SELECT NOT EXISTS (SELECT k, n FROM truth EXCEPT SELECT k, n FROM counted)
   AND NOT EXISTS (SELECT k, n FROM counted EXCEPT SELECT k, n FROM truth)
   AND (SELECT count(*) FROM truth) > 0
"""
