"""agentlog.verify_notification against notifications a real sender sent: `agentlog serve --demo`
(AGENTLOG_BIN, which scripts/test.sh sets; else built with scripts/agentlog-bin.sh) POSTs every
update of a task to a receiver in this process, and each one's JWT verifies against the keys the
server publishes at /.well-known/jwks.json; a tampered body, another audience or issuer, and an
expired JWT are refused."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import agentlog

ROOT = Path(__file__).resolve().parents[3]
SIGNATURE = "agentlog-notification-signature"


@pytest.fixture(scope="module")
def agentlog_bin() -> str:
    given = os.environ.get("AGENTLOG_BIN")
    if given:
        return given
    built = subprocess.run(
        [str(ROOT / "scripts" / "agentlog-bin.sh"), "build", "-p", "agentlog-server", "--bin", "agentlog", "--locked"],
        capture_output=True,
        text=True,
        check=True,
    )
    return built.stdout.strip()


Received = list[tuple[dict[str, str], bytes]]


@pytest.fixture()
def receiver() -> Iterator[tuple[str, Received]]:
    got: Received = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            got.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    finally:
        server.shutdown()


def post(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
        return answer


def test_a_real_senders_notifications_verify_and_tampered_ones_do_not(
    agentlog_bin: str, receiver: tuple[str, Received]
) -> None:
    hook, got = receiver
    agent = subprocess.Popen(
        [agentlog_bin, "serve", "--demo", "--listen", "127.0.0.1:0", "--log", "memory://", "--push-allow-private"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert agent.stdout is not None
        banner = agent.stdout.readline()
        url = next(word for word in banner.split() if word.startswith("http://"))
        config = {"url": hook, "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}
        params = {
            "message": {"messageId": "py-push-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"returnImmediately": True, "taskPushNotificationConfig": config},
        }
        task = post(url, "SendMessage", params)["result"]["task"]["id"]
        deadline = time.monotonic() + 20
        while len(got) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(got) == 6, [body for _, body in got]
        with urllib.request.urlopen(f"{url}.well-known/jwks.json", timeout=20) as reply:
            jwks = json.loads(reply.read())
    finally:
        agent.kill()
        agent.wait()
    kinds = [next(iter(json.loads(body))) for _, body in got]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate", "task"]
    for headers, body in got:
        assert headers["authorization"] == "Bearer s3cret"
        claims = agentlog.verify_notification(headers[SIGNATURE], body, jwks, hook, issuer=url)
        assert claims["taskId"] == task and claims["aud"] == hook
        assert claims["exp"] - claims["iat"] == 300
    # The JWKS as text works alike; every tampering is refused.
    headers, body = got[0]
    jwt = headers[SIGNATURE]
    assert agentlog.verify_notification(jwt, body, json.dumps(jwks), hook)["taskId"] == task
    claims = agentlog.verify_notification(jwt, body, jwks, hook)
    refusals: list[tuple[str, bytes, str, str | None, int | None]] = [
        (jwt, body + b" ", hook, None, None),
        (jwt, body, "http://127.0.0.1:1/other", None, None),
        (jwt, body, hook, "https://someone.else/", None),
        (jwt, body, hook, None, claims["exp"] + 3600),
        (jwt[:-4] + "AAAA", body, hook, None, None),
    ]
    for token, sent, audience, issuer, now in refusals:
        with pytest.raises(agentlog.UnauthenticatedError):
            agentlog.verify_notification(token, sent, jwks, audience, issuer=issuer, now=now)
    with pytest.raises(agentlog.UnauthenticatedError):
        agentlog.verify_notification(jwt, body, {"keys": []}, hook)
