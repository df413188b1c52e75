"""The SQLite adapter: a package of schema, connection handling and the repository."""

from trueheart_core.adapters.sqlite.repository import SQLiteRepository

__all__ = ["SQLiteRepository"]
