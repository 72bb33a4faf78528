"""Revision 0009 (``chat_versions.deletions``) on a database with chats in it, on each engine: the count starts at
0 for every chat and counts on from there; going back down drops the column and keeps the chats' versions."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from backend.config import Settings
from backend.stores.database import alembic_config, create_database_engine, database_url, migrate
from backend.stores.documents import DocumentStore


def test_chats_versioned_before_the_deletions_column_count_their_deletions_from_zero(
    database_settings: Settings,
) -> None:
    database_settings.data_dir.mkdir(parents=True)
    engine = create_database_engine(database_url(database_settings))
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")
        connection.execute(text("INSERT INTO chat_versions (chat_id, version) VALUES ('c1', 'v1'), ('c2', 'v2')"))
    migrate(engine)

    store = DocumentStore(engine)
    assert store.chat_deletions("c1") == store.chat_deletions("c2") == 0
    store.remove_chat("c1")
    assert store.chat_deletions("c1") == 1 and store.chat_deletions("c2") == 0
    assert store.version("c1") != "v1" and store.version("c2") == "v2"

    with engine.begin() as connection:  # and back down: the column goes, the chats' versions stay
        config.attributes["connection"] = connection
        command.downgrade(config, "0008")
    assert "deletions" not in {column["name"] for column in inspect(engine).get_columns("chat_versions")}
    with engine.connect() as db:
        rows = dict(db.execute(text("SELECT chat_id, version FROM chat_versions")).all())
    assert rows.keys() == {"c1", "c2"} and rows["c2"] == "v2"
    engine.dispose()
