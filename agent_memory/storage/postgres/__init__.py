"""The PostgreSQL store (psycopg 3, pgvector): imported only for postgresql:// locations."""
