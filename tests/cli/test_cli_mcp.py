"""``trueheart mcp`` before it serves, without the MCP SDK: its help, its usage errors,
a missing store, and the message when the ``mcp`` extra is not installed. Serving itself
is tested in ``tests/integrations/mcp`` (with the SDK)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import trueheart_core.integrations.mcp_server as package
from trueheart_core.cli import main

SCOPE = "acme/assistant/user-1"


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def without_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import mcp`` fail, as when the extra is not installed."""
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "trueheart_core.integrations.mcp_server.server", False)
    monkeypatch.delattr(package, "server", raising=False)


def test_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = call(capsys, "mcp", "--help")
    assert (status, err) == (0, "")
    for option in ("--store", "--scope", "--read-only", "--create", "--max-trust", "--port"):
        assert option in out
    assert "%2F" in out and "%%" not in out
    assert "mcp" in call(capsys, "--help")[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--scope", SCOPE), "the following arguments are required: --store"),
        (("--store", "x.db"), "the following arguments are required: --scope"),
        (("--store", "x.db", "--scope", "acme/a"), "argument --scope: must be tenant/owner/"),
        (
            ("--store", "x.db", "--scope", SCOPE, "--read-only", "--create"),
            "argument --create: not allowed with argument --read-only",
        ),
        (("--store", "x.db", "--scope", SCOPE, "--host", "0.0.0.0"), "argument --host: invalid"),
        (
            ("--store", "x.db", "--scope", SCOPE, "--port", "70000"),
            "argument --port: must be from 0",
        ),
        (("--store", "x.db", "--scope", SCOPE, "--raw-ttl", "3 days"), "argument --raw-ttl: must"),
        (("--store", "x.db", "--scope", SCOPE, "--max-trust", "full"), "argument --max-trust"),
    ],
)
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    status, out, err = call(capsys, "mcp", *args)
    assert (status, out) == (2, "")
    assert err.startswith("usage: trueheart mcp")
    assert f"trueheart mcp: error: {message}" in err


def test_host_and_port_need_http(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = str(tmp_path / "memory.db")
    for option in (("--port", "8123"), ("--host", "::1")):
        status, out, err = call(capsys, "mcp", "--store", store, "--scope", SCOPE, *option)
        assert (status, out, err) == (2, "", "trueheart: --host and --port need --transport http\n")


def test_a_missing_store_is_not_created(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = tmp_path / "missing.db"
    for extra in ((), ("--read-only",)):
        status, out, err = call(capsys, "mcp", "--store", str(store), "--scope", SCOPE, *extra)
        assert (status, out, err) == (3, "", f"trueheart: {store}: database not found\n")
    assert not store.exists()


def test_retention_is_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = str(tmp_path / "memory.db")
    status, out, err = call(
        capsys, "mcp", "--store", store, "--scope", SCOPE, "--create", "--recall-for", "10d"
    )
    assert (status, out, err) == (2, "", "trueheart: --recall-for: must be at least --clear-for\n")
    # a deadline no store can hold, refused before anything is opened
    for option in ("--raw-ttl", "--clear-for", "--recall-for"):
        status, out, err = call(
            capsys, "mcp", "--store", store, "--scope", SCOPE, "--create", option, "999999999d"
        )
        assert (status, out, err) == (
            2,
            "",
            f"trueheart: {option}: must end before the year 10000\n",
        )
    assert not Path(store).exists()


@pytest.mark.usefixtures("without_sdk")
def test_the_server_module_without_the_extra_names_it() -> None:
    """The documented module that puts the tools on the wire, imported by a host without
    the SDK: an ``ImportError`` that names the extra (not the SDK's module)."""
    with pytest.raises(ImportError) as raised:
        import trueheart_core.integrations.mcp_server.server  # noqa: F401
    assert str(raised.value) == (
        "trueheart_core.integrations.mcp_server.server needs the MCP SDK: "
        "pip install 'trueheart-core[mcp]'"
    )
    assert not isinstance(raised.value, ModuleNotFoundError)


@pytest.mark.usefixtures("without_sdk")
def test_without_the_extra(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = tmp_path / "memory.db"
    status, out, err = call(capsys, "mcp", "--store", str(store), "--scope", SCOPE, "--create")
    assert (status, out) == (1, "")
    assert err == (
        "trueheart: the MCP server needs the mcp extra: pip install 'trueheart-core[mcp]'\n"
    )
    assert not store.exists()  # refused before the store is created
