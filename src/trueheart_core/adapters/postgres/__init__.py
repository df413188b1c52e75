"""The PostgreSQL adapter (the ``postgres`` extra: psycopg 3 and psycopg-pool).

Imported only when used: ``trueheart_core.PostgresRepository`` loads it on first access.
"""

from trueheart_core.adapters.postgres.repository import PostgresRepository, schema_exists

__all__ = ["PostgresRepository", "schema_exists"]
