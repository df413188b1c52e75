"""SQL text of the library's rules, shared by the SQL backends; each builder is pinned to
its pure definition by tests.

The rules themselves live once, in pure Python under ``trueheart_core.domain``. A backend
that must evaluate one of them inside a statement (to filter or rank rows without
loading them) takes its SQL text from :mod:`trueheart_core.adapters.sql.expressions`
instead of writing its own copy, and ``tests/unit/test_sql_expressions.py`` checks that
the text gives the pure function's answer, input for input, on a real database.
"""
