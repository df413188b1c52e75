"""The rules of the live PostgreSQL schema, read from ``pg_catalog`` of a store just
created: every table of data carries the scope's three IDs; every primary key, unique
index and foreign key leads with ``tenant_id`` (so the schema can be distributed by
tenant as it stands); no column drawn from a sequence identifies a row on its own; and
every table of a scope's rows is either removed by a subject erasure or kept by design.
"""

from __future__ import annotations

from typing import Any

from trueheart_core import PostgresRepository
from trueheart_core.adapters.postgres.operations import KEPT_TABLES, SCOPED_ROWS
from trueheart_core.adapters.postgres.schema import GLOBAL_TABLES, TABLES, UNSAMPLED

SCOPE_COLUMNS = ("tenant_id", "owner_id", "subject_id")


def _tables(pg: Any, schema: str) -> list[str]:
    return [
        r[0]
        for r in pg.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace "
            "AND relkind IN ('r', 'p') ORDER BY relname",
            (schema,),
        )
    ]


def _columns(pg: Any, table: str, schema: str) -> list[str]:
    return [
        r[0]
        for r in pg.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (f'"{schema}"."{table}"',),
        )
    ]


def _keys(pg: Any, schema: str) -> list[tuple[str, str, str, list[str]]]:
    """``(table, index, kind, key columns)`` of every primary key and unique index."""
    rows = pg.execute(
        "SELECT t.relname, c.relname, CASE WHEN i.indisprimary THEN 'primary key' "
        "ELSE 'unique index' END, ARRAY(SELECT a.attname FROM unnest(i.indkey) "
        "WITH ORDINALITY AS k(attnum, n) JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = k.attnum WHERE k.n <= i.indnkeyatts ORDER BY k.n) "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_class t ON t.oid = i.indrelid "
        "WHERE t.relnamespace = %s::regnamespace AND (i.indisunique OR i.indisprimary) "
        "ORDER BY t.relname, c.relname",
        (schema,),
    ).fetchall()
    return [(r[0], r[1], r[2], list(r[3])) for r in rows]


def test_the_live_tables_are_the_schema_modules(
    repository: PostgresRepository, pg: Any, pg_schema: str
) -> None:
    assert _tables(pg, pg_schema) == sorted(TABLES)
    assert {"meta", "semantic_spaces"} == GLOBAL_TABLES


def test_every_table_of_data_has_the_three_scope_ids(
    repository: PostgresRepository, pg: Any, pg_schema: str
) -> None:
    for table in _tables(pg, pg_schema):
        columns = _columns(pg, table, pg_schema)
        if table in GLOBAL_TABLES:
            assert not set(SCOPE_COLUMNS) & set(columns), table
        else:
            assert columns[:3] == list(SCOPE_COLUMNS), table


def test_every_primary_key_and_unique_index_leads_with_the_tenant(
    repository: PostgresRepository, pg: Any, pg_schema: str
) -> None:
    keys = _keys(pg, pg_schema)
    primary = {table for table, _, kind, _ in keys if kind == "primary key"}
    assert primary == set(TABLES), "every table has a primary key"
    for table, index, kind, columns in keys:
        if table in GLOBAL_TABLES:
            continue
        assert columns[0] == "tenant_id", (table, index, kind, columns)
        assert len(columns) > 1, (table, index, kind, columns)


def test_every_foreign_key_leads_with_the_tenant(
    repository: PostgresRepository, pg: Any, pg_schema: str
) -> None:
    rows = pg.execute(
        "SELECT c.conname, c.conrelid::regclass::text, "
        "ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n) "
        "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n), "
        "ARRAY(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n) "
        "JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.n) "
        "FROM pg_constraint c WHERE c.connamespace = %s::regnamespace AND c.contype = 'f'",
        (pg_schema,),
    ).fetchall()
    for name, table, columns, referenced in rows:
        assert columns[0] == referenced[0] == "tenant_id", (name, table, columns, referenced)


def test_no_sequence_column_identifies_a_row_on_its_own(
    repository: PostgresRepository, pg: Any, pg_schema: str
) -> None:
    generated = {
        (r[0], r[1])
        for r in pg.execute(
            "SELECT t.relname, a.attname FROM pg_attribute a "
            "JOIN pg_class t ON t.oid = a.attrelid "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE t.relnamespace = %s::regnamespace AND t.relkind = 'r' AND a.attnum > 0 "
            "AND (a.attidentity <> '' OR pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%%')",
            (pg_schema,),
        )
    }
    assert generated == {("tombstones", "seq"), ("audit", "seq"), ("vectors", "vid")}
    for table, index, kind, columns in _keys(pg, pg_schema):
        assert [(table, c) for c in columns if (table, c) not in generated], (table, index, kind)
        assert columns[0] == "tenant_id" or table in GLOBAL_TABLES, (table, index)


def test_erasure_removes_or_keeps_every_table_of_a_scope() -> None:
    erased = [table for _, table in SCOPED_ROWS]
    assert len(erased) == len(set(erased))
    scoped = set(TABLES) - GLOBAL_TABLES
    assert set(erased) | KEPT_TABLES == scoped
    assert not set(erased) & KEPT_TABLES
    assert "vector_generations" in KEPT_TABLES, "a vector generation never goes back"


def test_no_column_of_caller_text_is_sampled_for_the_planner(
    repository: PostgresRepository, pg: Any, pg_schema: str
) -> None:
    """``ANALYZE`` keeps samples in ``pg_statistic``, where an erasure cannot reach:
    every byte column of an erased table is unsampled but the scope IDs and entity IDs
    (which tombstones keep anyway)."""
    rows = pg.execute(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), "
        "a.attstattarget FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "WHERE c.relnamespace = %s::regnamespace AND c.relkind = 'r' AND a.attnum > 0 "
        "AND NOT a.attisdropped",
        (pg_schema,),
    ).fetchall()
    unsampled = {(table, column) for table, columns in UNSAMPLED.items() for column in columns}
    assert {(t, c) for t, c, _, target in rows if target == 0} == unsampled
    erased = {table for _, table in SCOPED_ROWS}
    ids = {*SCOPE_COLUMNS, "event_id", "memory_id", "claim_id"}
    sampled_bytes = {
        (t, c) for t, c, kind, target in rows if t in erased and kind == "bytea" and target != 0
    }
    assert {c for _, c in sampled_bytes} <= ids, sampled_bytes
