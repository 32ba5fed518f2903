"""Alembic environment: runs on the caller's connection, inside the caller's transaction.

agent-memory passes an open connection (already inside ``BEGIN IMMEDIATE``) through
``config.attributes["connection"]`` so the whole upgrade, DDL included, commits or
rolls back as one. The alembic CLI path opens the database the same way the tool does.
"""

from alembic import context

connection = context.config.attributes.get("connection")

if connection is None:  # pragma: no cover - developer CLI path
    import os

    from agent_memory.storage.sqlite import database as db

    url = context.config.get_main_option("sqlalchemy.url") or ""
    path = os.environ.get("AGENT_MEMORY_DB") or url.removeprefix("sqlite:///") or None
    engine = db.create_engine(db.resolve_path(path))
    with engine.connect().execution_options(sqlite_write=True) as connection, connection.begin():
        context.configure(connection=connection, target_metadata=None, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=None, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
