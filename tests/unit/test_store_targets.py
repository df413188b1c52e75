"""Store targets as the command line and the evicortex face take them: a SQLite path or a
PostgreSQL URL, the library's ``schema`` parameter taken off the URL, and a URL shown
only without its secrets."""

from __future__ import annotations

import pytest

from evicortex import EviCortex
from evicortex.errors import ValidationError as EviCortexValidationError
from trueheart_core import ValidationError, stores


@pytest.mark.parametrize(
    ("target", "server"),
    [
        ("memory.db", False),
        (":memory:", False),
        ("postgresql://agent@db.internal/memory", True),
        ("postgres://db.internal/memory", True),
        ("POSTGRESQL://db.internal/memory", False),  # a file of that name
        ("./postgresql://x", False),
    ],
)
def test_a_url_names_a_server_and_anything_else_a_file(target: str, server: bool) -> None:
    assert stores.is_server_url(target) is server


def test_is_server_url_of_something_that_is_not_text() -> None:
    assert stores.is_server_url(b"postgresql://db/memory") is False
    assert stores.is_server_url(None) is False


@pytest.mark.parametrize(
    ("url", "conninfo", "schema"),
    [
        ("postgresql://agent@db/memory", "postgresql://agent@db/memory", "trueheart"),
        ("postgresql://agent@db/memory?schema=agents", "postgresql://agent@db/memory", "agents"),
        (
            "postgresql://agent@db:5433/memory?sslmode=require&schema=agents&application_name=x",
            "postgresql://agent@db:5433/memory?sslmode=require&application_name=x",
            "agents",
        ),
        (
            "postgresql://db/memory?application_name=billing%20agent&schema=a%5Fb"
            "&host=%2Fvar%2Frun%2Fmy%20pg",
            "postgresql://db/memory?application_name=billing%20agent&host=%2Fvar%2Frun%2Fmy%20pg",
            "a_b",
        ),
    ],
)
def test_the_schema_parameter_is_taken_off_the_url(url: str, conninfo: str, schema: str) -> None:
    assert stores.server_target(url) == (conninfo, schema)


def test_two_schemas_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"^url: must name at most one schema$"):
        stores.server_target("postgresql://db/memory?schema=a&schema=b")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://agent:s3cret@db:5432/memory?schema=x",
            "postgresql://agent:***@db:5432/memory?schema=x",
        ),
        (
            "postgresql://agent@db/memory?password=s3cret&schema=x",
            "postgresql://agent@db/memory?password=***&schema=x",
        ),
        (
            "postgresql://agent@db/memory?sslpassword=s3cret",
            "postgresql://agent@db/memory?sslpassword=***",
        ),
        ("postgresql://:s3cret@db/memory", "postgresql://:***@db/memory"),
        ("postgresql://agent@db/memory?schema=x", "postgresql://agent@db/memory?schema=x"),
        ("postgresql://agent:s3cret@[db/memory", "postgresql://..."),  # not a URL: nothing shown
        ("memory.db", "memory.db"),
    ],
)
def test_a_url_is_shown_without_its_secrets(url: str, shown: str) -> None:
    assert stores.redacted(url) == shown
    assert "s3cret" not in stores.redacted(url)


@pytest.mark.parametrize(
    ("url", "held"),
    [
        ("postgresql://agent:s3cret@db/memory", True),
        ("postgresql://agent:@db/memory", True),  # an empty password is still one
        ("postgresql://agent@db/memory?password=s3cret", True),
        ("postgresql://agent@db/memory?sslpassword=s3cret", True),
        ("postgresql://agent@db/memory?passfile=/run/pgpass", False),
        ("postgresql://agent@db/memory", False),
    ],
)
def test_which_urls_hold_a_password(url: str, held: bool) -> None:
    assert stores.holds_password(url) is held


@pytest.mark.parametrize(
    "url", ["postgresql://app@[::1/agents", "postgresql://app:pw@db]x/agents?schema=s"]
)
def test_a_url_that_cannot_be_parsed_is_a_validation_error(url: str) -> None:
    # Refused before any driver is needed: the same error from every entry point.
    for call in (stores.server_target, stores.store_exists, stores.open_repository):
        with pytest.raises(ValidationError, match=r"^url: must be a PostgreSQL URL$"):
            call(url)
    with pytest.raises(EviCortexValidationError, match=r"^url: must be a PostgreSQL URL$"):
        EviCortex.open(url)
    assert "pw" not in stores.redacted(url)
