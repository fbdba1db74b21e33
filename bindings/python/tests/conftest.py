"""Shared helpers: the log URLs every bridge and worker test runs over (memory://, file:// in a
temporary directory, and iggy:// when an iggy-server binary is found), and message builders."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def message(text: str, **extra: Any) -> dict[str, Any]:
    """A SendMessageRequest with one user text message."""
    msg: dict[str, Any] = {
        "messageId": f"py-{uuid.uuid4().hex}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    msg.update(extra)
    return {"message": msg}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def iggy_url() -> Iterator[str | None]:
    """An Iggy server of our own when a binary is found, else None (tests print SKIPPED)."""
    binary = os.environ.get("AGENTLOG_IGGY_SERVER") or shutil.which("iggy-server")
    if not binary:
        yield None
        return
    port, http, quic, websocket = (_free_port() for _ in range(4))
    home = tempfile.mkdtemp(prefix="agentlog-py-iggy-")
    env = dict(os.environ)
    # As the Rust harness (tests/src/iggy_server.rs) starts it.
    env.update(
        {
            "IGGY_SYSTEM_PATH": f"{home}/data",
            "IGGY_TCP_ADDRESS": f"127.0.0.1:{port}",
            "IGGY_HTTP_ADDRESS": f"127.0.0.1:{http}",
            "IGGY_QUIC_ADDRESS": f"127.0.0.1:{quic}",
            "IGGY_WEBSOCKET_ADDRESS": f"127.0.0.1:{websocket}",
            "IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT": "3s",
            "IGGY_SYSTEM_SHARDING_PIN_CORES": "false",
            "IGGY_SYSTEM_MEMORY_POOL_SIZE": "512 MiB",
        }
    )
    server = subprocess.Popen(
        [binary, "--with-default-root-credentials"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=home,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        server.kill()
        raise RuntimeError("iggy-server did not start")
    try:
        yield f"iggy://iggy:iggy@127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(params=["memory", "file", "iggy"])
def log_url(
    request: pytest.FixtureRequest, tmp_path: Path, iggy_url: str | None
) -> str:
    """Each log the bridge and worker tests run over."""
    kind = request.param
    if kind == "memory":
        return "memory://"
    if kind == "file":
        return f"file://{tmp_path / 'log'}"
    if iggy_url is None:
        print("SKIPPED: no iggy-server binary (PATH or AGENTLOG_IGGY_SERVER)")
        pytest.skip("SKIPPED: no iggy-server binary (PATH or AGENTLOG_IGGY_SERVER)")
    return iggy_url


def agent_name() -> str:
    """A fresh agent name, so tests sharing one Iggy server do not share topics."""
    return f"py{uuid.uuid4().hex[:10]}"
