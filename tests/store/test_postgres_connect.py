"""Opening a PostgreSQL store that cannot be opened: one clear StoreError, never the password.

A wrong password, an unreachable server and a missing ``postgres`` extra
each give a :class:`~plugin_sdk.errors.StoreError` that names the URL with
its password as ``***``; the password is in no message, log line, command
output or ``store.path``. The wrong password is answered by a small stand-in
server on a Unix socket (the test database trusts every local connection).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import struct
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.errors import StoreError
from plugin_sdk.store.doctor import doctor
from plugin_sdk.testing import drop_postgres_schemas, postgres_schema

SECRET = "s3cret"
POSTGRES_URL = os.environ.get("MEMSDK_TEST_POSTGRES", "")
needs_postgres = pytest.mark.skipif(
    not POSTGRES_URL, reason="PostgreSQL: set MEMSDK_TEST_POSTGRES to a database URL to run it"
)
UNREACHABLE = [
    f"postgresql://memsdk:{SECRET}@/memsdk?host=/nonexistent",
    f"postgres://memsdk:{SECRET}@localhost:1/memsdk",
    f"postgresql://memsdk@/memsdk?host=/nonexistent&password={SECRET}",
]


def everything_said(error: BaseException, caplog: pytest.LogCaptureFixture) -> str:
    """The error's message and its whole chain, the traceback, and every log line."""
    said = [traceback.format_exception(error), caplog.text]
    cause: BaseException | None = error
    while cause is not None:
        said.append(repr(cause))
        cause = cause.__cause__ or cause.__context__
    return "\n".join("".join(part) for part in said)


@pytest.fixture
def wrong_password() -> Iterator[tuple[str, list[bytes]]]:
    """``(URL, passwords received)`` of a server that asks for a password and refuses it."""
    folder = tempfile.mkdtemp(prefix="pgfake", dir="/tmp")  # a socket path must be short
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(folder, ".s.PGSQL.5432"))
    listener.listen(4)
    received: list[bytes] = []

    def refuse(client: socket.socket) -> None:
        with client:
            (length,) = struct.unpack("!i", client.recv(4))
            client.recv(length - 4)  # the startup message
            client.sendall(b"R" + struct.pack("!ii", 8, 3))  # a password, in clear text
            _message, length = struct.unpack("!ci", client.recv(5))  # "p": the password
            received.append(client.recv(length - 4).rstrip(b"\0"))
            fields = (
                b'SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed for user "memsdk"\0\0'
            )
            client.sendall(b"E" + struct.pack("!i", 4 + len(fields)) + fields)

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            refuse(client)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"postgresql://memsdk:{SECRET}@/memsdk?host={folder}", received
    listener.close()
    thread.join(timeout=5)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("url", UNREACHABLE)
def test_an_unreachable_server_is_a_store_error_naming_the_url_without_the_password(url, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(StoreError, match="cannot open store postgres") as caught:
        Store(url, project="harbour")
    assert "***" in str(caught.value)
    assert SECRET not in everything_said(caught.value, caplog)
    with pytest.raises(StoreError) as by_doctor:
        doctor(url)
    assert "***" in str(by_doctor.value)
    assert SECRET not in everything_said(by_doctor.value, caplog)


@pytest.mark.parametrize("command", [["doctor"], ["memory", "list"]])
def test_a_command_on_an_unreachable_server_says_so_in_one_line_without_the_password(command):
    result = CliRunner().invoke(cli, [*command, "--db", UNREACHABLE[0]])
    assert result.exit_code != 0
    # The command line's own redaction (plugin_sdk/redact.py) writes "[redacted]" over the "***".
    assert re.search(
        r"cannot open store postgresql://memsdk:(\*\*\*|\[redacted\])@/memsdk\?host=/nonexistent",
        result.output,
    ), result.output
    assert SECRET not in result.output and "Traceback" not in result.output


def test_a_wrong_password_is_a_store_error_naming_the_url_without_the_password(
    wrong_password, caplog
):
    url, received = wrong_password
    caplog.set_level(logging.DEBUG)
    with pytest.raises(StoreError, match="password authentication failed") as caught:
        Store(url, project="harbour")
    assert received == [SECRET.encode()]  # the URL's password was the one sent
    message = str(caught.value)
    assert message.startswith(f"cannot open store {url.replace(SECRET, '***')}:"), message
    assert SECRET not in everything_said(caught.value, caplog)


def test_without_the_postgres_extra_the_error_says_which_to_install(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    url = UNREACHABLE[0]
    with pytest.raises(StoreError, match=r"pip install -e '\.\[postgres\]'") as caught:
        Store(url, project="harbour")
    assert str(caught.value).startswith(
        "cannot open store postgresql://memsdk:***@/memsdk?host=/nonexistent:"
    )
    assert SECRET not in everything_said(caught.value, caplog)


@needs_postgres
def test_an_open_store_shows_its_url_without_the_password(caplog):
    caplog.set_level(logging.DEBUG)
    url, schema = postgres_schema(POSTGRES_URL)
    with_password = url.replace("postgresql://memsdk@", f"postgresql://memsdk:{SECRET}@", 1)
    assert SECRET in with_password  # the test database trusts local connections: any password
    try:
        with Store(with_password, project="harbour") as store:
            assert store.path == url.replace("memsdk@", "memsdk:***@", 1)
            result = CliRunner().invoke(cli, ["memory", "list", "--db", with_password])
        assert SECRET not in result.output and SECRET not in caplog.text
    finally:
        drop_postgres_schemas(POSTGRES_URL, [schema])
